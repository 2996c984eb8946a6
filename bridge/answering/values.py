"""An answer's values must fit the request's questions."""

from __future__ import annotations

from typing import Any

from bridge.answering.desk import Attempt, Desk
from bridge.errors import AnswerRejected
from bridge.models import Request, has_lone_surrogate
from bridge.questions import InvalidAnswer, Question, QuestionKind


def validated(request: Request, values: dict[str, Any]) -> dict[str, Any]:
    """`values` normalised against the questions; AnswerRejected naming the question otherwise."""
    if not isinstance(values, dict):
        raise AnswerRejected("answer values must be an object keyed by question id")
    if has_lone_surrogate(values):
        raise AnswerRejected("the answer holds text that is not valid Unicode (a lone surrogate)")
    unknown = set(values) - {q.id for q in request.questions}
    if unknown:
        raise AnswerRejected(f"unknown question ids {sorted(unknown)}; "
                             f"expected {[q.id for q in request.questions]}")
    out: dict[str, Any] = {}
    for question in request.questions:
        value = values.get(question.id)
        if value is None and not question.required:
            continue
        try:
            out[question.id] = question.validate_answer(value)
        except InvalidAnswer as exc:
            raise AnswerRejected(str(exc)) from None
    return out


async def fit_the_questions(desk: Desk, attempt: Attempt) -> None:
    """Refuse (AnswerRejected) values that do not fit; keep the normalised ones."""
    attempt.clean = validated(attempt.request, attempt.values)


def fits(question: Question, value: Any) -> bool:
    try:
        question.validate_answer(value)
    except InvalidAnswer:
        return False
    return True


def is_rejection(request: Request, clean: dict[str, Any]) -> bool:
    """The answer says no to a confirm question (a rejection is never held back)."""
    return any(q.kind is QuestionKind.confirm and clean.get(q.id) == "no" for q in request.questions)


def redacted(request: Request, values: dict[str, Any]) -> dict[str, Any]:
    """`values` as the record may show them: secret answers masked."""
    secret = request.secret_question_ids
    return {k: ("[secret]" if k in secret else v) for k, v in values.items()}
