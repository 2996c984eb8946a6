"""Pure translation between Mastra's suspended workflow runs and the bridge model (PROTOCOLS §4).

A suspended step is found in a run's snapshot: `suspendedPaths` names it and
`context[step]` holds its `suspendPayload` and `suspendedAt`; a nested workflow's suspension
sits on the outer step, with the inner path in `suspendPayload.__workflow_meta.path`.

The question comes from the step's own resume schema when Mastra exposes one (see
`schema.py`), so the answer has the shape the step expects. Without one, the suspend
payload is read the way people write it: `question`/`message`/`prompt`/`reason`/`title`
is the prompt; `options` (or `choices`, `allowedValues`: strings, or objects with
`label`/`value`/`id`) makes a choice;
`fields` (names, `{name: description}` or `[{name, label}]`) makes a form; anything else is
a text answer, sent as `{<resume_key>: value}` (a form's object as it is). Keys Mastra
adds for itself (`__workflow_meta`, any `__…`) are never shown.

Options listed in the payload are offered as a choice also when the resume schema wants
one string, or allows anything (`z.any()`, for the whole resumeData or one property):
then with a free-text "other" answer beside them, and the step gets the chosen value
itself (or the typed text), not JSON to edit.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from adapters.mastra.schema import OTHER, AnswerPlan, Slot, allows_anything, plan_questions, resume_data
from bridge.models import Answer, RequestIn
from bridge.questions import FormField, Question, QuestionKind, fit_json

ENGINE = "mastra"
PROMPT_KEYS = ("question", "message", "prompt", "reason", "title", "description")
OPTION_KEYS = ("options", "choices", "allowedValues", "allowed_values")  # where payloads list their options
MAX_PROMPT = 4000
_FIELD_NAME = re.compile(r"[^A-Za-z0-9_.:-]")


class InvalidSnapshot(ValueError):
    """A run from the engine that cannot be read (garbage, wrong types)."""


@dataclass
class Shape:
    """What a suspend payload asks: kind, prompt, option label → value, form fields."""

    kind: QuestionKind
    prompt: str
    options: dict[str, Any] = field(default_factory=dict)
    fields: list[FormField] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def visible(payload: Any) -> Any:
    """The payload without the keys Mastra keeps for itself (`__workflow_meta`, `__…`)."""
    if isinstance(payload, dict):
        return {k: v for k, v in payload.items() if not (isinstance(k, str) and k.startswith("__"))}
    return payload


def _option_pairs(raw: Any) -> dict[str, Any]:
    """label → value; labels made unique and ≤ 200 characters."""
    pairs: dict[str, Any] = {}
    if not isinstance(raw, list):
        return pairs
    for item in raw[:100]:
        value: Any
        if isinstance(item, str | int | float | bool):
            label, value = str(item), item
        elif isinstance(item, dict):
            value = item.get("value", item.get("id", item.get("label")))
            label = str(item.get("label") or item.get("name") or value or "")
        else:
            continue
        label = label.strip()[:190] or "option"
        base, n = label, 2
        while label in pairs:
            label = f"{base} ({n})"
            n += 1
        pairs[label] = value
    return pairs


def _form_fields(raw: Any) -> list[FormField]:
    items: list[tuple[str, str, bool, list[str]]] = []
    if isinstance(raw, dict):
        items = [(str(k), _text(v) or str(k), True, []) for k, v in raw.items()]
    elif isinstance(raw, list):
        for f in raw:
            if isinstance(f, str):
                items.append((f, f, True, []))
            elif isinstance(f, dict) and isinstance(f.get("name"), str):
                opts = [str(o) for o in f.get("options", []) if isinstance(o, str | int | float)]
                label = _text(f.get("label")) or _text(f.get("description")) or f["name"]
                items.append((f["name"], label, bool(f.get("required", True)), opts[:100]))
    out: list[FormField] = []
    seen: set[str] = set()
    for name, label, required, opts in items[:50]:
        clean = _FIELD_NAME.sub("_", name)[:64] or "field"
        if clean in seen:
            continue
        seen.add(clean)
        out.append(FormField(name=clean, label=label[:500], required=required, options=list(dict.fromkeys(opts))))
    return out


def read_payload(payload: Any, fallback: str) -> Shape:
    """The question a suspend payload asks (never raises: unknown shapes become text)."""
    shown = visible(payload)
    data = shown if isinstance(shown, dict) else {"value": shown}
    prompt = next((t for k in PROMPT_KEYS if (t := _text(data.get(k)))), None)
    details = {k: v for k, v in data.items() if k not in PROMPT_KEYS and k not in (*OPTION_KEYS, "fields")}
    if prompt is None:
        prompt = fallback if not data else f"{fallback}\n{json.dumps(data, default=str)[:MAX_PROMPT]}"
    prompt = prompt[:MAX_PROMPT]
    options = next((o for k in OPTION_KEYS if (o := _option_pairs(data.get(k)))), {})
    if options:
        return Shape(QuestionKind.choice, prompt, options=options, details=details)
    fields = _form_fields(data.get("fields"))
    if fields:
        return Shape(QuestionKind.form, prompt, fields=fields, details=details)
    return Shape(QuestionKind.text, prompt, details=details)


def shape_to_question(shape: Shape) -> Question:
    return Question(
        id="answer",
        kind=shape.kind,
        prompt=shape.prompt,
        options=list(shape.options) if shape.kind is QuestionKind.choice else [],
        fields=shape.fields,
    )


# -- finding suspended steps ----------------------------------------------------------------
@dataclass
class SuspendedStep:
    """One waiting step: `path` is the step to resume (outer step first for nested workflows)."""

    workflow: str
    run_id: str
    path: list[str]
    payload: Any
    suspended_at: str

    @property
    def step(self) -> str:
        return self.path[0]

    @property
    def name(self) -> str:
        return ".".join(self.path)

    @property
    def external_id(self) -> str:
        return f"wf:{self.workflow}:{self.run_id}:{self.name}:{self.suspended_at}"[:200]


def read_snapshot(run: Any) -> dict[str, Any]:
    """A listed run's snapshot as an object (some storages return it as JSON text)."""
    if not isinstance(run, dict) or not isinstance(run.get("runId"), str):
        raise InvalidSnapshot("a run needs a runId")
    snap = run.get("snapshot")
    if isinstance(snap, str):
        try:
            snap = json.loads(snap)
        except (ValueError, RecursionError):
            raise InvalidSnapshot(f"run {run['runId']}: snapshot is not JSON") from None
    if not isinstance(snap, dict):
        raise InvalidSnapshot(f"run {run['runId']}: snapshot is not an object")
    return snap


def nested_path(payload: Any) -> list[str]:
    meta = payload.get("__workflow_meta") if isinstance(payload, dict) else None
    path = meta.get("path") if isinstance(meta, dict) else None
    if isinstance(path, list) and path and all(isinstance(p, str) and p for p in path):
        return [str(p)[:200] for p in path[:10]]
    return []


def suspended_steps(workflow: str, run: Any) -> list[SuspendedStep]:
    """Each suspended step of one run from `GET …/runs?status=suspended`; [] when none."""
    snap = read_snapshot(run)
    if snap.get("status", "suspended") != "suspended":
        return []
    paths = snap.get("suspendedPaths") or {}
    context = snap.get("context") or {}
    if not isinstance(paths, dict) or not isinstance(context, dict):
        raise InvalidSnapshot(f"run {run['runId']}: suspendedPaths/context are not objects")
    steps = []
    for step in paths:
        found = context.get(step)
        entry: dict[str, Any] = found if isinstance(found, dict) else {}
        if entry.get("status", "suspended") != "suspended":
            continue
        when = entry.get("suspendedAt") or snap.get("timestamp") or run.get("updatedAt") or ""
        payload = entry.get("suspendPayload")
        path = [str(step)[:200], *nested_path(payload)]
        steps.append(SuspendedStep(workflow, run["runId"], path, payload, str(when)))
    return steps


# -- the request ----------------------------------------------------------------------------
@dataclass
class StepInfo:
    """What `GET /api/workflows/{id}` says about a step: its resume schema and description."""

    schema: dict[str, Any] | None = None
    description: str = ""


def step_to_request(step: SuspendedStep, info: StepInfo | None, resume_key: str) -> tuple[RequestIn, dict[str, Any]]:
    """The request for a waiting step and the plan that turns its answer into resumeData."""
    shape = read_payload(step.payload, f"Workflow {step.workflow} is waiting at step {step.name}")
    schema = info.schema if info else None
    planned = plan_questions(schema, shape.prompt)
    if planned is None and shape.options and allows_anything(schema):  # z.any(): the value itself
        edit = Question(id="answer", kind=QuestionKind.edit, prompt=shape.prompt, help_text="JSON")
        planned = [edit], AnswerPlan([Slot("answer", None, "any")])
    if planned is not None:
        questions, plan = planned
        if len(questions) == 1 and plan.slots[0].type in ("string", "any") and shape.options:
            questions, plan = _offer_payload_options(questions[0], plan, shape)
        plan_ref = plan.as_ref()
    else:
        questions = [shape_to_question(shape)]
        plan_ref = {"mode": "payload", "kind": str(shape.kind), "options": shape.options, "key": resume_key}
    description = [info.description] if info and info.description else []
    typed = {s.get("other") for s in plan_ref.get("slots", [])} - {None}  # a choice's "other": not its own question
    if len([q for q in questions if q.id not in typed]) > 1:
        description.append(shape.prompt)
    request = RequestIn(
        external_id=step.external_id,
        title=f"{step.workflow}: {step.name}"[:500],
        description="\n\n".join(description)[:20_000],
        engine=ENGINE,
        run_id=step.run_id[:200],
        agent=step.workflow[:500],
        tool=step.name[:200],
        context={
            "workflow": step.workflow,
            "step": step.name,
            "run": step.run_id,
            **({"details": fit_json(shape.details)} if shape.details else {}),
        },
        labels={"workflow": step.workflow[:500], "kind": "workflow"},
        questions=questions,
    )
    ref = {"kind": "workflow", "workflow": step.workflow, "run_id": step.run_id, "step": step.step,
           "path": step.path, "suspended_at": step.suspended_at, "answer": plan_ref}
    return request, ref


def _offer_payload_options(question: Question, plan: AnswerPlan, shape: Shape) -> tuple[list[Question], AnswerPlan]:
    """A step that wants one string, or anything, and whose payload lists options: show them
    as a choice; when it takes anything, a typed answer too (see `schema.OTHER`)."""
    slot = plan.slots[0]
    free = slot.type == "any"
    slot.type, slot.values = "enum", shape.options
    options = list(shape.options)
    if not free or len(options) >= 100 or OTHER in options:
        choice = question.model_copy(update={"kind": QuestionKind.choice, "options": options, "help_text": ""})
        return [choice], plan
    slot.other = f"{question.id}_other"
    choice = question.model_copy(update={"kind": QuestionKind.choice, "options": [*options, OTHER], "help_text": ""})
    typed = Question(id=slot.other, kind=QuestionKind.text, prompt=f"Other answer (with {OTHER!r})", required=False,
                     help_text="Typed text is sent instead of the choice.")
    return [choice, typed], plan


# -- the answer -----------------------------------------------------------------------------
def payload_value(plan: dict[str, Any], answer: Answer) -> Any:
    """resumeData for a step without a resume schema: the chosen option's own value (not its
    label), the text, or the form's object; all but forms under `key`."""
    value = answer.values.get("answer")
    kind = plan.get("kind")
    if kind == QuestionKind.choice and isinstance(value, str):
        value = (plan.get("options") or {}).get(value, value)
    if kind == QuestionKind.form and isinstance(value, dict):
        return value
    return {plan.get("key") or "answer": value}


def answer_to_resume_data(ref: dict[str, Any], answer: Answer, resume_key: str) -> Any:
    """What the step gets as resumeData (raises AnswerDoesNotFit)."""
    plan = ref.get("answer")
    if not isinstance(plan, dict):  # a request stored before plans existed
        plan = {"mode": "payload", "kind": ref.get("shape", "text"), "options": ref.get("options") or {},
                "key": resume_key}
    if plan.get("mode") == "schema":
        return resume_data(plan, answer)
    return payload_value(plan, answer)


def resume_body(ref: dict[str, Any], data: Any) -> dict[str, Any]:
    """`{"step": …, "resumeData": …}`; a nested step is named by its whole path."""
    path = ref.get("path")
    step: str | list[str] = path if isinstance(path, list) and len(path) > 1 else str(ref["step"])
    return {"step": step, "resumeData": data}
