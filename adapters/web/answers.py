"""Turn a submitted inbox form into answer values, with an error per input (pure functions).

Input names: `q.<question id>` for a question, `q.<question id>.<field>` for a form field,
`reason` for the optional reason. The core validates again when the answer is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bridge.questions import InvalidAnswer, Question, QuestionKind

MAX_REASON = 2000


def input_name(question_id: str, form_field: str | None = None) -> str:
    return f"q.{question_id}" if form_field is None else f"q.{question_id}.{form_field}"


@dataclass
class ParsedAnswer:
    """Values keyed by question id (only valid ones), errors keyed by input name, and what to
    put back in the form when it is shown again (never a secret)."""

    values: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    prior: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


def parse_answer(questions: Sequence[Question], form: Mapping[str, Sequence[str]]) -> ParsedAnswer:
    """Read every question's inputs from `form` (name → submitted strings)."""
    # browsers send textarea line breaks as CRLF; people typed "\n"
    form = {k: [v.replace("\r\n", "\n") for v in values] for k, values in form.items()}
    parsed = ParsedAnswer()
    for question in questions:
        _parse_question(question, form, parsed)
    if parsed.errors:
        for question in questions:  # a secret is never sent back: ask for it again
            name = input_name(question.id)
            if question.kind is QuestionKind.secret and name not in parsed.errors:
                parsed.errors[name] = "enter it again (a secret is never shown back)"
    reason = _first(form, "reason")
    if reason is not None and reason.strip():
        if len(reason) > MAX_REASON:
            parsed.errors["reason"] = f"keep the reason under {MAX_REASON} characters"
        parsed.reason = reason.strip()[:MAX_REASON]
        parsed.prior["reason"] = parsed.reason
    return parsed


def _first(form: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = form.get(name)
    return values[0] if values else None


def _parse_question(question: Question, form: Mapping[str, Sequence[str]], out: ParsedAnswer) -> None:
    name = input_name(question.id)
    kind = question.kind
    if kind is QuestionKind.multi_choice:
        chosen = [v for v in form.get(name, ()) if v]
        out.prior[name] = chosen
        _accept(question, chosen, name, out)
        return
    if kind is QuestionKind.form:
        _parse_form(question, form, out)
        return
    raw = _first(form, name)
    if kind is not QuestionKind.secret:
        out.prior[name] = raw
    if raw is None or raw.strip() == "":
        if question.required:
            out.errors[name] = "enter the secret" if kind is QuestionKind.secret else "an answer is required"
        return
    if kind is QuestionKind.edit:
        try:
            value: Any = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            out.errors[name] = f"not valid JSON: {exc}"
            return
        _accept(question, value, name, out)
        return
    _accept(question, raw if kind in (QuestionKind.text, QuestionKind.secret) else raw.strip(), name, out)


def _parse_form(question: Question, form: Mapping[str, Sequence[str]], out: ParsedAnswer) -> None:
    value: dict[str, Any] = {}
    for f in question.fields:
        name = input_name(question.id, f.name)
        raw = _first(form, name)
        out.prior[name] = raw
        if raw is None or raw.strip() == "":
            if f.required:
                out.errors[name] = "this field is required"
            continue
        if f.options and raw not in f.options:
            out.errors[name] = f"choose one of {', '.join(f.options)}"
            continue
        value[f.name] = raw
    if any(k.startswith(input_name(question.id) + ".") for k in out.errors):
        return
    if not value and not question.required:
        return
    _accept(question, value, input_name(question.id), out)


def _accept(question: Question, value: Any, name: str, out: ParsedAnswer) -> None:
    if not question.required and value in ([], {}, None):
        return
    try:
        out.values[question.id] = question.validate_answer(value)
    except InvalidAnswer as exc:
        out.errors[name] = exc.reason
