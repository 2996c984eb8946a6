"""The structured-questions format (PROTOCOLS §2) ⇄ the native model."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bridge.models import Callback, Request, RequestIn
from bridge.questions import FormField, Question, QuestionKind

KIND_OF_INPUT = {
    "free_text": QuestionKind.text,
    "selection": QuestionKind.choice,
    "approval": QuestionKind.confirm,
    "structured": QuestionKind.form,
    "multi_field": QuestionKind.form,
}


class StructuredQuestion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    question: str = Field(min_length=1, max_length=20_000)
    input_type: str = "free_text"
    options: list[str] = Field(default_factory=list, max_length=100)
    fields: dict[str, str] = Field(default_factory=dict, max_length=50)
    required: bool = True
    help_text: str = Field(default="", max_length=20_000)


class StructuredRequestIn(BaseModel):
    """PROTOCOLS §2 as sent by graph runtimes, plus the bridge's own optional keys."""

    model_config = ConfigDict(extra="ignore")

    request_id: str = Field(min_length=1, max_length=200)
    node_id: str | None = Field(default=None, max_length=200)
    objective: str = Field(default="", max_length=20_000)
    current_state: str = Field(default="", max_length=20_000)
    instructions: str = Field(default="", max_length=20_000)
    examples: list[str] = Field(default_factory=list, max_length=50)
    missing_info: list[str] = Field(default_factory=list, max_length=50)
    questions: list[StructuredQuestion] = Field(min_length=1, max_length=50)
    # bridge extensions
    callback: Callback | None = None
    responders: list[str] = Field(default_factory=list, max_length=200)
    labels: dict[str, str] = Field(default_factory=dict)
    timeout_s: float | None = Field(default=None, gt=0)
    engine: str | None = Field(default=None, max_length=100)


def is_structured(body: dict[str, Any]) -> bool:
    if "title" in body:
        return False
    if "objective" in body or "node_id" in body:
        return True
    questions = body.get("questions")
    return isinstance(questions, list) and any(
        isinstance(q, dict) and ("question" in q or "input_type" in q) for q in questions
    )


def to_native(body: StructuredRequestIn) -> RequestIn:
    questions = [_question(q) for q in body.questions]
    title = body.objective or body.questions[0].question
    description = "\n\n".join(p for p in (body.current_state, body.instructions) if p)
    context: dict[str, Any] = {}
    for key in ("node_id", "objective", "current_state", "instructions"):
        value = getattr(body, key)
        if value:
            context[key] = value
    if body.examples:
        context["examples"] = body.examples
    if body.missing_info:
        context["missing_info"] = body.missing_info
    return RequestIn(
        external_id=body.request_id,
        title=title[:500],
        description=description,
        engine=body.engine or "structured",
        context=context,
        labels=body.labels,
        questions=questions,
        responders=body.responders,
        timeout_s=body.timeout_s,
        callback=body.callback,
    )


def _question(q: StructuredQuestion) -> Question:
    kind = KIND_OF_INPUT.get(q.input_type, QuestionKind.text)
    if kind is QuestionKind.choice and not q.options:
        kind = QuestionKind.text
    fields: list[FormField] = []
    if kind is QuestionKind.form:
        fields = [FormField(name=name, label=label or name) for name, label in q.fields.items()]
        if not fields:
            kind = QuestionKind.text
    return Question(
        id=q.id, kind=kind, prompt=q.question, options=q.options if kind is QuestionKind.choice else [],
        fields=fields, required=q.required, help_text=q.help_text,
    )


def structured_answer(request: Request, values: dict[str, Any] | None, state: str) -> dict[str, Any]:
    """The §2 answer body: {request_id, answers, raw_input, response_time_ms} (+ status)."""
    answers: dict[str, Any] = {}
    raw: list[str] = []
    for question in request.questions:
        if values is None or question.id not in values:
            continue
        value = values[question.id]
        if question.kind is QuestionKind.confirm:
            value = value == "yes"
        answers[question.id] = value
        raw.append(value if isinstance(value, str) else json.dumps(value))
    answered_at = request.answer.answered_at if request.answer else request.updated_at
    return {
        "request_id": request.external_id or request.id,
        "answers": answers,
        "raw_input": "\n".join(raw),
        "response_time_ms": int((answered_at - request.created_at).total_seconds() * 1000),
        "status": state,
    }
