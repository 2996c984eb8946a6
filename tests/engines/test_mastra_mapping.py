"""Mastra suspend payloads → questions, answers → resume bodies (no network)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.mastra.mapping import (
    InvalidSnapshot,
    answer_value,
    read_payload,
    step_to_request,
    suspended_steps,
    task_to_request,
    waiting_task,
    workflow_resume_body,
)
from bridge.models import Answer, QuestionKind, Responder


def _answer(value: Any) -> Answer:
    return Answer(
        values={"answer": value},
        responder=Responder(platform="web", user_id="u"),
        via="web",
        answered_at=datetime.now(UTC),
    )


def _run(payload: Any, status: str = "suspended", as_text: bool = False) -> dict[str, Any]:
    snap = {
        "status": status,
        "context": {"input": {}, "approve": {"status": "suspended", "suspendPayload": payload, "suspendedAt": 17}},
        "suspendedPaths": {"approve": [1]},
    }
    return {"runId": "r1", "snapshot": json.dumps(snap) if as_text else snap}


def test_options_make_a_choice_and_resume_with_the_option_value() -> None:
    (step,) = suspended_steps("deploy", _run({"question": "Ship?", "options": [{"label": "Yes", "value": True}, "No"]}))
    req, shape = step_to_request(step)
    q = req.questions[0]
    assert (q.kind, q.prompt, q.options) == (QuestionKind.choice, "Ship?", ["Yes", "No"])
    value = answer_value(shape.kind, shape.options, _answer("Yes"))
    assert value is True
    assert workflow_resume_body("approve", shape.kind, value, "answer") == {
        "step": "approve",
        "resumeData": {"answer": True},
    }
    assert req.external_id == "wf:deploy:r1:approve:17"


def test_fields_make_a_form_whose_object_is_the_resume_data() -> None:
    (step,) = suspended_steps(
        "onboard", _run({"message": "Who?", "fields": {"name": "Full name", "team": "Team"}}, as_text=True)
    )
    req, shape = step_to_request(step)
    q = req.questions[0]
    assert q.kind is QuestionKind.form and [f.name for f in q.fields] == ["name", "team"]
    value = {"name": "Ada", "team": "core"}
    assert workflow_resume_body("approve", shape.kind, value, "answer")["resumeData"] == value


def test_anything_else_is_text_and_keeps_the_payload_visible() -> None:
    shape = read_payload({"amount": 12}, "Workflow w is waiting")
    assert shape.kind is QuestionKind.text and '"amount": 12' in shape.prompt
    assert read_payload(None, "waiting").prompt == 'waiting\n{"value": null}'
    assert read_payload("plain", "w").kind is QuestionKind.text


def test_duplicate_option_labels_are_made_unique() -> None:
    shape = read_payload({"options": ["a", "a", {"id": "x"}]}, "f")
    assert list(shape.options) == ["a", "a (2)", "x"]


def test_runs_that_are_not_suspended_yield_nothing_and_garbage_is_refused() -> None:
    assert suspended_steps("w", _run({}, status="success")) == []
    for bad in [{"snapshot": {}}, {"runId": "r", "snapshot": "{oops"}, {"runId": "r", "snapshot": 3}, "run"]:
        with pytest.raises(InvalidSnapshot):
            suspended_steps("w", bad)


def test_inbox_task_question_options_and_data() -> None:
    task = {
        "id": "t1",
        "status": "waiting_for_input",
        "title": "Review PR",
        "suspendedAt": "2026-01-01T00:00:00Z",
        "suspendPayload": {
            "reason": "needs review",
            "payload": {"question": "Merge?", "options": ["merge", "close"], "data": {"pr": 7}},
        },
    }
    wt = waiting_task("reviews", task)
    assert wt is not None
    req, shape = task_to_request(wt)
    assert req.questions[0].options == ["merge", "close"]
    assert req.context["data"] == {"pr": 7}
    assert req.description == "needs review"
    assert answer_value(shape.kind, shape.options, _answer("close")) == "close"
    assert waiting_task("reviews", {**task, "status": "completed"}) is None
