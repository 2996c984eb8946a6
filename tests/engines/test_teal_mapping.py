"""Teal paused replies → requests, answers → approve/reject (no network)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.teal.mapping import InvalidPause, parse_pause, pause_to_request, resume_body
from bridge.models import Answer, QuestionKind, Responder
from tests.engines.fake_teal import FakeTeal, tool_call


def _answer(values: dict[str, Any]) -> Answer:
    return Answer(
        values=values, responder=Responder(platform="web", user_id="u1"), via="web", answered_at=datetime.now(UTC)
    )


def test_state_response_with_one_call_becomes_one_confirm() -> None:
    fake = FakeTeal()
    reply = fake.start_task("Bearer alice", plan=[[tool_call("Deploy", "ship", {"env": "prod"})]])
    pause = parse_pause(reply)
    assert pause is not None
    req = pause_to_request(pause, agent="ReleaseBot/0.1")
    assert [q.kind for q in req.questions] == [QuestionKind.confirm]
    assert req.title == "Approve Deploy.ship"
    assert '"env": "prod"' in req.questions[0].help_text
    assert req.context["tool_calls"] == [{"plugin": "Deploy", "function": "ship", "arguments": {"env": "prod"}}]
    assert req.run_id == reply["task_id"]


def test_each_tool_call_is_shown_and_all_must_be_approved() -> None:
    fake = FakeTeal()
    reply = fake.start_task("t", plan=[[tool_call("A", "one", {}), tool_call("B", "two", '{"x": 1}')]])
    pause = parse_pause(reply["content"])
    assert pause is not None
    req = pause_to_request(pause, agent="a")
    assert [q.prompt for q in req.questions] == ["Run A.one?", "Run B.two?"]
    assert resume_body("answered", _answer({"tool_1": "yes", "tool_2": "yes"})) == {"action": "approve"}
    assert resume_body("answered", _answer({"tool_1": "yes", "tool_2": "no"})) == {"action": "reject"}
    assert resume_body("cancelled", None) == {"action": "reject"}
    assert resume_body("expired", _answer({"tool_1": "yes", "tool_2": "yes"})) == {"action": "approve"}


def test_follow_up_pause_with_same_request_id_gets_a_new_external_id() -> None:
    fake = FakeTeal()
    reply = fake.start_task("t", plan=[[tool_call("A", "one", {})], [tool_call("A", "two", {})]])
    first = parse_pause(reply)
    task = next(iter(fake.tasks.values()))
    second = parse_pause(fake._apply(task, "approve"))
    assert first is not None and second is not None
    assert first.request_id == second.request_id
    assert first.external_id != second.external_id
    # the same pause submitted twice keys the same request (idempotent intake)
    assert parse_pause(reply) is not None and parse_pause(reply).external_id == first.external_id  # type: ignore[union-attr]


def test_final_replies_are_not_pauses() -> None:
    fake = FakeTeal()
    reply = fake.start_task("t", plan=[[tool_call("A", "one", {})]])
    task = next(iter(fake.tasks.values()))
    assert parse_pause(fake._apply(task, "approve")) is None
    assert parse_pause({"status": "Completed", "content": {"output": "hi"}}) is None
    assert (
        parse_pause({"session_id": "s", "task_id": "t", "request_id": "r", "message": "Tool excecution rejected."})
        is None
    )
    assert reply["status"] == "Paused"


@pytest.mark.parametrize(
    "body",
    [
        [],
        "paused",
        {"status": "Paused", "content": "x"},
        {
            "tool_calls": [],
            "approval_url": "/x",
            "rejection_url": "/y",
            "session_id": "s",
            "task_id": "t",
            "request_id": "r",
        },
        {
            "tool_calls": [{}],
            "approval_url": "/x",
            "rejection_url": "/y",
            "session_id": "s",
            "task_id": "t",
            "request_id": "../admin",
        },
        {
            "tool_calls": [{}],
            "approval_url": "/x",
            "rejection_url": "/y",
            "session_id": "s",
            "task_id": "t",
            "request_id": "..",
        },
        {
            "tool_calls": [{}] * 51,
            "approval_url": "/x",
            "rejection_url": "/y",
            "session_id": "s",
            "task_id": "t",
            "request_id": "r",
        },
        {"something": "else"},
    ],
)
def test_malformed_pauses_are_refused_with_a_reason(body: Any) -> None:
    with pytest.raises(InvalidPause) as err:
        parse_pause(body)
    assert str(err.value)


def test_a_task_is_judged_against_the_pause_decided_on() -> None:
    from adapters.teal.task import InvalidTask, judge

    teal = FakeTeal()
    reply = teal.start_task("Bearer o", plan=[[tool_call("A", "one", {})], [tool_call("A", "two", {})]])
    pause = parse_pause(reply)
    assert pause is not None
    task = next(iter(teal.tasks.values()))
    rid, mine = pause.request_id, pause.fingerprint()
    assert judge(task.view(), rid, mine).kind == "paused_here"
    teal.decide_elsewhere(rid, "approve")
    chained = judge(task.view(), rid, mine)
    assert chained.kind == "paused_next" and chained.pause is not None
    assert [c.function_name for c in chained.pause.tool_calls] == ["two"] and chained.pause.request_id == rid
    teal.decide_elsewhere(rid, "approve")
    assert (task.status, judge(task.view(), rid, mine).kind) == ("Running", "finished")
    for bad in (None, [], {"status": "Paused"}, {"status": "Paused", "items": [1]}, {"status": "Odd", "items": [{}]},
                {"status": "Paused", "items": [{"request_id": "../x", "pending_tool_calls": []}]}):
        with pytest.raises(InvalidTask):
            judge(bad, rid, mine)
