"""What a click or a dialog submitted, read strictly into an answer's values.

Teams sends an `Action.Execute` click's `data` merged with the card's input values; a
dialog sends its inputs the same way. Anything that does not fit the request's questions
raises `ForgedAction` (the person is told; nothing is recorded).
"""

from __future__ import annotations

from typing import Any

from adapters.teams.cards import APPROVE, INPUT_PREFIX, REASON_INPUT, REJECT, SUBMIT, inline_question
from bridge.models import Request
from bridge.questions import QuestionKind

MAX_VALUE_CHARS = 5000


class ForgedAction(ValueError):
    """An action or a dialog whose data the bridge did not put there."""


def request_id_of(data: Any) -> str:
    """The request an action's data names."""
    if not isinstance(data, dict):
        raise ForgedAction("the action carries no data")
    request_id = data.get("request_id")
    if not isinstance(request_id, str) or not 0 < len(request_id) <= 64:
        raise ForgedAction("the action names no request")
    return request_id


def _text_value(data: dict[str, Any], question_id: str) -> str | None:
    raw = data.get(INPUT_PREFIX + question_id)
    if raw is None:
        return None
    if not isinstance(raw, str) or len(raw) > MAX_VALUE_CHARS:
        raise ForgedAction(f"the answer to {question_id!r} is not text of at most {MAX_VALUE_CHARS} characters")
    return raw


def reason_of(data: dict[str, Any]) -> str | None:
    raw = data.get(REASON_INPUT)
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise ForgedAction("the reason is not text")
    return raw[:500]


def values_of(request: Request, verb: str, data: dict[str, Any], *, secrets: bool = False) -> dict[str, Any]:
    """The answer `verb` with `data` gives to `request`. `secrets`: the data came from the
    secret dialog (the only place a secret is taken)."""
    inline = inline_question(request)
    if verb in (APPROVE, REJECT):
        if inline is None or inline.kind is not QuestionKind.confirm:
            raise ForgedAction("this request is not answered with Approve or Reject")
        return {inline.id: "yes" if verb == APPROVE else "no"}
    if verb != SUBMIT:
        raise ForgedAction(f"unknown action {verb[:40]!r}")
    if inline is not None and inline.kind is QuestionKind.choice and "choice" in data:
        index = data["choice"]
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(inline.options):
            raise ForgedAction("that choice is not one of the request's options")
        return {inline.id: inline.options[index]}
    values: dict[str, Any] = {}
    for question in request.questions:
        if question.kind is QuestionKind.secret and not secrets:
            raise ForgedAction("a secret is only taken from the dialog in a one-to-one chat")
        if question.kind is QuestionKind.form:
            fields = {f.name: _text_value(data, f"{question.id}.{f.name}") for f in question.fields}
            if any(v is not None for v in fields.values()):
                values[question.id] = {k: v for k, v in fields.items() if v is not None}
            continue
        raw = _text_value(data, question.id)
        if raw is None:
            continue
        if question.kind is QuestionKind.multi_choice:
            values[question.id] = [v for v in raw.split(",") if v] if raw else []
        elif question.kind is QuestionKind.confirm:
            values[question.id] = "yes" if raw == "yes" else "no"
        else:
            values[question.id] = raw
    if not values:
        raise ForgedAction("the action carries no answer")
    return values
