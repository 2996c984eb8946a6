"""Mastra runs → questions, answers → resume bodies, runs → verdicts (no network).

The shapes are Mastra 1.x's as the real server returns them (see test_mastra_e2e.py, which
runs the same code against it)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.mastra.mapping import (
    InvalidSnapshot,
    StepInfo,
    answer_to_resume_data,
    read_payload,
    resume_body,
    step_to_request,
    suspended_steps,
)
from adapters.mastra.runs import RunState, judge, refusal, same_answer
from adapters.mastra.schema import AnswerDoesNotFit, parse_schema, plan_questions, resume_data
from bridge.models import Answer, QuestionKind, Responder

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["approved"], "additionalProperties": False}


def _answer(values: dict[str, Any], reason: str | None = None) -> Answer:
    return Answer(values=values, responder=Responder(platform="web", user_id="u"), via="web",
                  answered_at=datetime.now(UTC), reason=reason)


def _run(payload: Any, status: str = "suspended", as_text: bool = False, step: str = "approve") -> dict[str, Any]:
    snap = {
        "status": status,
        "context": {"input": {}, step: {"status": "suspended", "suspendPayload": payload, "suspendedAt": 17}},
        "suspendedPaths": {step: [1]},
    }
    return {"runId": "r1", "snapshot": json.dumps(snap) if as_text else snap}


# -- suspend payloads (steps without a resume schema) ------------------------------------------
def test_options_make_a_choice_and_resume_with_the_option_value() -> None:
    (step,) = suspended_steps("deploy", _run({"question": "Ship?", "options": [{"label": "Yes", "value": True}, "No"]}))
    req, ref = step_to_request(step, None, "answer")
    q = req.questions[0]
    assert (q.kind, q.prompt, q.options) == (QuestionKind.choice, "Ship?", ["Yes", "No"])
    data = answer_to_resume_data(ref, _answer({"answer": "Yes"}), "answer")
    assert resume_body(ref, data) == {"step": "approve", "resumeData": {"answer": True}}
    assert req.external_id == "wf:deploy:r1:approve:17" and ref["suspended_at"] == "17"


def test_fields_make_a_form_whose_object_is_the_resume_data() -> None:
    run = _run({"message": "Who?", "fields": {"name": "Full name", "team": "Team"}}, as_text=True)
    (step,) = suspended_steps("onboard", run)
    req, ref = step_to_request(step, StepInfo(), "answer")
    q = req.questions[0]
    assert q.kind is QuestionKind.form and [f.name for f in q.fields] == ["name", "team"]
    value = {"name": "Ada", "team": "core"}
    assert answer_to_resume_data(ref, _answer({"answer": value}), "answer") == value


def test_anything_else_is_text_and_keeps_the_payload_visible_without_mastras_keys() -> None:
    shape = read_payload({"amount": 12, "__workflow_meta": {"runId": "x"}, "__hint": 1}, "Workflow w is waiting")
    assert shape.kind is QuestionKind.text and shape.prompt == 'Workflow w is waiting\n{"amount": 12}'
    assert shape.details == {"amount": 12}
    assert read_payload(None, "waiting").prompt == 'waiting\n{"value": null}'
    assert read_payload({"__workflow_meta": {}}, "waiting").prompt == "waiting"


def test_duplicate_option_labels_are_made_unique() -> None:
    shape = read_payload({"options": ["a", "a", {"id": "x"}]}, "f")
    assert list(shape.options) == ["a", "a (2)", "x"]


def test_runs_that_are_not_suspended_yield_nothing_and_garbage_is_refused() -> None:
    assert suspended_steps("w", _run({}, status="success")) == []
    for bad in [{"snapshot": {}}, {"runId": "r", "snapshot": "{oops"}, {"runId": "r", "snapshot": 3}, "run"]:
        with pytest.raises(InvalidSnapshot):
            suspended_steps("w", bad)


def test_a_nested_suspension_is_resumed_by_its_whole_path() -> None:
    payload = {"question": "Who signs?", "__workflow_meta": {"runId": "r1", "path": ["sign"]}}
    (step,) = suspended_steps("nested", _run(payload, step="contract"))
    info = StepInfo({"type": "object", "properties": {"signer": {"type": "string"}}, "required": ["signer"]})
    req, ref = step_to_request(step, info, "answer")
    assert (req.tool, req.questions[0].id, req.questions[0].prompt) == ("contract.sign", "signer", "Who signs?")
    assert "details" not in req.context
    data = answer_to_resume_data(ref, _answer({"signer": "Ada"}), "answer")
    assert resume_body(ref, data) == {"step": ["contract", "sign"], "resumeData": {"signer": "Ada"}}


def test_a_request_stored_before_answer_plans_still_resumes() -> None:
    ref = {"kind": "workflow", "workflow": "w", "run_id": "r", "step": "s", "shape": "choice",
           "options": {"Yes": "y"}}
    assert answer_to_resume_data(ref, _answer({"answer": "Yes"}), "decision") == {"decision": "y"}


# -- resume schemas ---------------------------------------------------------------------------
def test_an_approval_schema_is_one_confirm_whose_rejection_reason_fills_reason() -> None:
    planned = plan_questions(parse_schema(json.dumps({"json": APPROVAL})), "Ship v2?")
    assert planned is not None
    questions, plan = planned
    assert [(q.id, q.kind, q.prompt) for q in questions] == [("approved", QuestionKind.confirm, "Ship v2?")]
    ref = plan.as_ref()
    assert resume_data(ref, _answer({"approved": "no"}, reason="too risky")) == {"approved": False,
                                                                                 "reason": "too risky"}
    assert resume_data(ref, _answer({"approved": "yes"}, reason="ignored")) == {"approved": True}
    assert resume_data(ref, _answer({"approved": "no"})) == {"approved": False}


def test_a_required_reason_is_asked_like_any_other_field() -> None:
    schema = {**APPROVAL, "required": ["approved", "reason"]}
    planned = plan_questions(schema, "Ship?")
    assert planned is not None
    assert [q.kind for q in planned[0]] == [QuestionKind.confirm, QuestionKind.text]
    assert planned[1].reason is None


def test_property_types_become_fitting_questions_and_values() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "enum": ["eu", "us"], "description": "Where"},
            "replicas": {"type": "integer", "minimum": 1},
            "ratio": {"type": "number"},
            "checks": {"type": "array", "items": {"type": "string", "enum": ["lint", "unit"]}},
            "extra": {"type": "object", "properties": {"a": {"type": "string"}}},
            "note": {"type": "string", "title": "A note"},
        },
        "required": ["region", "replicas"],
    }
    planned = plan_questions(schema, "Configure")
    assert planned is not None
    questions, plan = planned
    assert [(q.id, q.kind, q.prompt, q.required) for q in questions] == [
        ("region", QuestionKind.choice, "Where", True),
        ("replicas", QuestionKind.text, "Replicas", True),
        ("ratio", QuestionKind.text, "Ratio", False),
        ("checks", QuestionKind.multi_choice, "Checks", False),
        ("extra", QuestionKind.edit, "Extra", False),
        ("note", QuestionKind.text, "A note", False),
    ]
    assert questions[1].help_text == "A whole number, at least 1"
    values = {"region": "us", "replicas": "3", "ratio": "0.5", "checks": ["unit"], "extra": {"a": "b"}, "note": ""}
    assert resume_data(plan.as_ref(), _answer(values)) == {
        "region": "us", "replicas": 3, "ratio": 0.5, "checks": ["unit"], "extra": {"a": "b"}}
    for field, bad in (("replicas", "three"), ("replicas", "2.5"), ("ratio", "nan"), ("ratio", "1e999")):
        with pytest.raises(AnswerDoesNotFit, match=field):
            resume_data(plan.as_ref(), _answer({**values, field: bad}))


def test_non_object_and_unusable_schemas() -> None:
    planned = plan_questions({"type": "string", "enum": ["a", "b"]}, "Pick")
    assert planned is not None
    assert resume_data(planned[1].as_ref(), _answer({"answer": "b"})) == "b"
    assert plan_questions(None, "x") is None
    assert plan_questions({"type": "object", "properties": {}}, "x") is None
    assert plan_questions({"anyOf": []}, "x") is None
    assert parse_schema("{not json") is None and parse_schema('"text"') is None
    many = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(60)}}
    planned = plan_questions(many, "Fill in")
    assert planned is not None and [q.kind for q in planned[0]] == [QuestionKind.edit]


def test_a_step_wanting_one_string_offers_the_payloads_options() -> None:
    (step,) = suspended_steps("w", _run({"question": "Region?", "options": [{"label": "Europe", "value": "eu"}]}))
    info = StepInfo({"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]})
    req, ref = step_to_request(step, info, "answer")
    assert (req.questions[0].kind, req.questions[0].options) == (QuestionKind.choice, ["Europe"])
    assert answer_to_resume_data(ref, _answer({"region": "Europe"}), "answer") == {"region": "eu"}


def test_hostile_schemas_still_give_questions_that_fit_the_model() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert parse_schema(deep) is None and parse_schema(json.dumps({"json": None})) is None
    long_name = "n" * 1000
    schema = {
        "type": "object",
        "required": "approved",  # not a list: ignored
        "properties": {
            long_name: {"type": "string", "description": "d" * 50_000},
            "n" * 999 + "x": {"type": "string"},
            "huge": {"enum": list(range(5000))},
            "labels": {"enum": ["x" * 500, "x" * 501]},
            "weird": 7,
        },
    }
    planned = plan_questions(schema, "p" * 10_000)
    assert planned is not None
    questions, plan = planned
    assert [q.id for q in questions] == ["n" * 60, "n" * 60 + "_2", "huge", "labels", "weird"]
    assert all(len(q.prompt) <= 4000 and not q.required for q in questions)
    assert [q.kind for q in questions] == [QuestionKind.text, QuestionKind.text, QuestionKind.edit,
                                           QuestionKind.choice, QuestionKind.edit]
    assert all(len(o) <= 200 for o in questions[3].options) and len(set(questions[3].options)) == 2
    assert resume_data(plan.as_ref(), _answer({"labels": questions[3].options[1]})) == {"labels": "x" * 501}


# -- verdicts ---------------------------------------------------------------------------------
def _processed(status: str, **steps: dict[str, Any]) -> dict[str, Any]:
    return {"runId": "r", "status": status, "steps": steps}


def test_verdicts_from_the_run_itself() -> None:
    waiting = {"status": "suspended", "suspendedAt": 17}
    assert judge(_processed("suspended", approve=waiting), "approve", "17", {"a": 1}).state is RunState.waiting
    assert judge(_processed("running", approve=waiting), "approve", "17", {"a": 1}).state is RunState.claimed
    cancelled = judge(_processed("canceled", approve=waiting), "approve", "17", {"a": 1})
    assert cancelled.state is RunState.gone and "it is canceled" in cancelled.reason
    took = {"status": "success", "resumePayload": {"a": 1}, "resumedAt": 20}
    assert judge(_processed("success", approve=took), "approve", "17", {"a": 1}).state is RunState.took
    other = judge(_processed("suspended", approve={**took, "resumePayload": {"a": 2}}, notes=waiting),
                  "approve", "17", {"a": 1})
    assert other.state is RunState.gone and "answered elsewhere" in other.reason and "waiting at notes" in other.reason
    old = judge(_processed("success", approve={**took, "resumedAt": 5}), "approve", "17", {"a": 1})
    assert old.state is RunState.gone  # an answer older than the question is not ours
    assert "not part of the run" in judge(_processed("success"), "approve", "17", {}).reason


def test_the_same_step_asking_again_shows_the_answer_it_took() -> None:
    again = {"status": "suspended", "suspendedAt": 30, "resumePayload": {"answer": "first"}, "resumedAt": 25}
    assert judge(_processed("suspended", round=again), "round", "17", {"answer": "first"}).state is RunState.took
    assert judge(_processed("suspended", round=again), "round", "30", {"answer": "x"}).state is RunState.waiting


def test_nested_and_raw_snapshot_shapes() -> None:
    nested = _processed("suspended", contract={"status": "running", "suspendedAt": 17},
                        **{"contract.sign": {"status": "suspended", "suspendedAt": 16}})
    assert judge(nested, "contract", "17", {}, "contract.sign").state is RunState.waiting
    raw = {"runId": "r", "snapshot": json.dumps({"status": "suspended", "context": {"approve": {
        "status": "suspended", "suspendedAt": 17}}, "suspendedPaths": {"approve": [0]}})}
    assert judge(raw, "approve", "17", None).state is RunState.waiting
    for bad in ("x", {"status": 3}, {"runId": "r", "snapshot": "{"}):
        with pytest.raises(InvalidSnapshot):
            judge(bad, "approve", "17", None)


def test_same_answer_and_refusals() -> None:
    assert same_answer({"approved": True, "reason": "x"}, {"approved": True})  # Mastra dropped a key
    assert not same_answer({"approved": True}, {"approved": False})
    assert not same_answer({"a": 1}, {"b": 1}) and same_answer({}, {}) and same_answer("x", "x")
    failed = {"status": "failed", "error": {"message": "Invalid resume data: \n- signer: required",
                                            "details": {"type": "resume data"}}}
    assert refusal(failed) == "Invalid resume data: \n- signer: required"
    assert refusal({"status": "failed", "error": {"message": "boom"}}) is None
    assert refusal({"status": "success"}) is None and refusal("x") is None


@pytest.mark.parametrize("key", ["options", "choices", "allowedValues", "allowed_values"])
def test_listed_options_under_any_common_key_make_a_choice(key: str) -> None:
    shape = read_payload({"question": "Pick", key: ["a", {"label": "B", "value": 2}]}, "fallback")
    assert (shape.kind, shape.options, shape.details) == ("choice", {"a": "a", "B": 2}, {})


def test_schemas_that_allow_anything() -> None:
    from adapters.mastra.schema import allows_anything

    assert allows_anything({}) and allows_anything({"$schema": "http://json-schema.org/draft-07/schema#"})
    assert not allows_anything(None) and not allows_anything({"type": "object"})
    assert not allows_anything({"anyOf": [{"type": "string"}, {"type": "number"}]})
