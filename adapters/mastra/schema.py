"""A suspended step's own resume schema → the questions people answer → the step's resumeData.

Mastra serialises a step's `resumeSchema` as JSON Schema (draft-07, wrapped as `{"json": …}`)
in `GET /api/workflows/{id}`. An object schema becomes one question per property: a boolean
is Approve / Reject, an enum is a choice, an array of enum values is a multiple choice, a
string is text, a number is text read back as a number, anything else is JSON to edit. A
schema with one boolean and an optional reason-like string (`reason`, `comment`, `feedback`,
`note(s)`, `message`) is a single Approve / Reject question; a rejection's reason fills
that string. The plan (`AnswerPlan.as_ref()`) is kept in the request's source_ref so the
answer becomes exactly the object the step expects, long after the request was made.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from bridge.models import Answer
from bridge.questions import Question, QuestionKind

REASON_NAMES = ("reason", "comment", "comments", "feedback", "note", "notes", "message", "rejectionReason",
                "rejection_reason")
MAX_PROPERTIES = 40
OTHER = "Other (type it below)"  # the choice that stands for a typed answer
_QID = re.compile(r"[^A-Za-z0-9_.:-]")


class AnswerDoesNotFit(ValueError):
    """An answer that cannot be turned into what the step's resume schema asks for."""


@dataclass
class Slot:
    """One question and the resumeData property it fills (`name` None: the whole resumeData)."""

    qid: str
    name: str | None
    type: str  # boolean | enum | multi_enum | string | number | integer | json | any
    values: dict[str, Any] = field(default_factory=dict)  # option label → engine value
    other: str | None = None  # an enum's free-text question: typed text is sent instead of the choice


@dataclass
class AnswerPlan:
    slots: list[Slot]
    reason: str | None = None  # property filled from a rejection's reason

    def as_ref(self) -> dict[str, Any]:
        return {"mode": "schema", "reason": self.reason,
                "slots": [{"qid": s.qid, "name": s.name, "type": s.type, "values": s.values,
                           **({"other": s.other} if s.other else {})} for s in self.slots]}


def parse_schema(raw: Any) -> dict[str, Any] | None:
    """The JSON Schema in a serialised `resumeSchema` (None when absent or unreadable)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return None
    if isinstance(raw, dict) and "json" in raw and not ({"type", "properties", "enum"} & raw.keys()):
        raw = raw["json"]
    return raw if isinstance(raw, dict) and raw else None


def allows_anything(schema: Any) -> bool:
    """A schema that puts no constraint on the value (`z.any()`, `z.unknown()`: `{}` or only
    `$schema`/`description`/`title`/`default`)."""
    return isinstance(schema, dict) and not (schema.keys() - {"$schema", "description", "title", "default"})


def _label(name: str) -> str:
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|[_\-]+", " ", name).strip()
    return (words[:1].upper() + words[1:]) or name


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _enum_values(schema: dict[str, Any]) -> list[Any] | None:
    values = schema.get("enum")
    if values is None and isinstance(schema.get("const"), str | int | float | bool):
        values = [schema["const"]]
    if isinstance(values, list) and 0 < len(values) <= 100 and all(
        isinstance(v, str | int | float | bool) for v in values
    ):
        return values
    return None


def _labelled(values: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for value in values:
        label = (str(value).strip() or "(empty)")[:190]
        base, n = label, 2
        while label in out:
            label = f"{base} ({n})"
            n += 1
        out[label] = value
    return out


def _slot_and_question(qid: str, name: str | None, schema: dict[str, Any], prompt: str, required: bool,
                       help_text: str) -> tuple[Slot, Question]:
    kind = schema.get("type")
    enum = _enum_values(schema)
    raw_items = schema.get("items")
    items: dict[str, Any] = raw_items if isinstance(raw_items, dict) else {}
    hints = [help_text] if help_text else []
    if enum is not None:
        values = _labelled(enum)
        slot = Slot(qid, name, "enum", values)
        question = Question(id=qid, kind=QuestionKind.choice, prompt=prompt, options=list(values), required=required)
    elif kind == "boolean":
        slot = Slot(qid, name, "boolean")
        question = Question(id=qid, kind=QuestionKind.confirm, prompt=prompt, required=required)
    elif kind in ("integer", "number"):
        bounds = [f"{word} {schema[key]}" for key, word in (("minimum", "at least"), ("maximum", "at most"))
                  if isinstance(schema.get(key), int | float)]
        what = "A whole number" if kind == "integer" else "A number"
        hints.append(what + (f", {' and '.join(bounds)}" if bounds else ""))
        slot = Slot(qid, name, kind)
        question = Question(id=qid, kind=QuestionKind.text, prompt=prompt, required=required)
    elif kind == "string" and not schema.get("format") == "binary":
        slot = Slot(qid, name, "string")
        question = Question(id=qid, kind=QuestionKind.text, prompt=prompt, required=required)
    elif kind == "array" and (choices := _enum_values(items)) is not None:
        values = _labelled(choices)
        slot = Slot(qid, name, "multi_enum", values)
        question = Question(id=qid, kind=QuestionKind.multi_choice, prompt=prompt, options=list(values),
                            required=required)
    else:
        default = schema.get("default")
        hints.append("JSON")
        slot = Slot(qid, name, "any" if allows_anything(schema) else "json")
        question = Question(id=qid, kind=QuestionKind.edit, prompt=prompt, required=required,
                            default=default if isinstance(default, dict | list) else None)
    question.help_text = " · ".join(h for h in hints if h)[:2000]
    return slot, question


def _qid(name: str, taken: set[str]) -> str:
    base = _QID.sub("_", name)[:60] or "field"
    qid, n = base, 2
    while qid in taken:
        qid = f"{base}_{n}"
        n += 1
    taken.add(qid)
    return qid


def plan_questions(schema: dict[str, Any] | None, prompt: str) -> tuple[list[Question], AnswerPlan] | None:
    """Questions for a resume schema, `prompt` (what the step's suspend payload asks) on the
    first one; None when the schema says nothing usable (no schema, or an object without
    properties): the caller then reads the suspend payload instead."""
    if not schema:
        return None
    props = schema.get("properties")
    if schema.get("type") != "object" and not isinstance(props, dict):
        if not ({"type", "enum", "const"} & schema.keys()):
            return None
        slot, question = _slot_and_question("answer", None, schema, prompt, True, _text(schema.get("description")))
        return [question], AnswerPlan([slot])
    if not isinstance(props, dict) or not props:
        return None
    if len(props) > MAX_PROPERTIES:  # too many to ask one by one: the whole object as JSON
        slot = Slot("answer", None, "json")
        return [Question(id="answer", kind=QuestionKind.edit, prompt=prompt, help_text="JSON")], AnswerPlan([slot])
    listed = schema.get("required")
    required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
    entries = [(str(n), s if isinstance(s, dict) else {}) for n, s in props.items()]
    booleans = [n for n, s in entries if s.get("type") == "boolean"]
    reason = None
    if len(booleans) == 1:
        reason = next((n for n, s in entries if n in REASON_NAMES and n not in required
                       and s.get("type") == "string"), None)
    asked = [(n, s) for n, s in entries if n != reason]
    taken: set[str] = set()
    slots, questions = [], []
    for name, prop in asked:
        description = _text(prop.get("description")) or _text(prop.get("title"))
        if len(asked) == 1:
            text, help_text = prompt, (description if description != prompt else "")
        else:
            text, help_text = description or _label(name), ""
        slot, question = _slot_and_question(_qid(name, taken), name, prop, text[:4000], name in required, help_text)
        slots.append(slot)
        questions.append(question)
    return questions, AnswerPlan(slots, reason)


def resume_data(plan: dict[str, Any], answer: Answer) -> Any:
    """The resumeData for `answer` under a stored plan (`AnswerPlan.as_ref()`)."""
    data: dict[str, Any] = {}
    rejected = False
    for slot in plan.get("slots", []):
        if slot.get("other"):
            value = _chosen_or_typed(slot, answer.values.get(slot["qid"]), answer.values.get(slot["other"]))
        else:
            value = _engine_value(slot, answer.values.get(slot["qid"]))
        if slot.get("name") is None:
            return value
        if value is not None:
            data[slot["name"]] = value
        rejected = rejected or (slot.get("type") == "boolean" and value is False)
    reason = plan.get("reason")
    if reason and rejected and answer.reason:
        data[reason] = answer.reason[:2000]
    return data


def _chosen_or_typed(slot: dict[str, Any], chosen: Any, typed: Any) -> Any:
    """An option offered with a free-text alternative: the typed text when there is one,
    else the chosen option's own value."""
    if isinstance(typed, str) and typed.strip():
        return typed.strip()
    if chosen is None or chosen == OTHER:
        raise AnswerDoesNotFit(f"{OTHER!r} was chosen but no other answer was typed")
    return slot["values"].get(chosen, chosen)


def _engine_value(slot: dict[str, Any], value: Any) -> Any:
    kind, name = slot.get("type"), slot.get("name") or "the answer"
    if value is None or value == "" or value == []:
        return None
    if kind == "boolean":
        return value == "yes" if isinstance(value, str) else bool(value)
    if kind == "enum":
        return slot["values"].get(value, value)
    if kind == "multi_enum":
        return [slot["values"].get(v, v) for v in (value if isinstance(value, list) else [value])]
    if kind in ("integer", "number"):
        text = str(value).strip()
        what = "a whole number" if kind == "integer" else "a number"
        try:
            if kind == "integer":
                return int(text)
            number = float(text)
        except ValueError:
            raise AnswerDoesNotFit(f"{name} must be {what}; got {text[:40]!r}") from None
        if not math.isfinite(number):
            raise AnswerDoesNotFit(f"{name} must be {what}; got {text[:40]!r}")
        return int(number) if number.is_integer() and text.lstrip("+-").isdigit() else number
    return value
