"""Interrupt values → questions, answers → resume values (pure, no server)."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.langgraph.mapping import (
    MAX_ACTIONS_ONE_BY_ONE,
    ResumeError,
    ResumePlan,
    map_interrupt,
    resume_value,
    safe_context_value,
)
from bridge.models import InvalidAnswer, QuestionKind, RequestIn

INBOX = {
    "action_request": {"action": "run_command", "args": {"command": "ls"}},
    "config": {"allow_ignore": True, "allow_respond": True, "allow_edit": True, "allow_accept": True},
    "description": "Check the command",
}


def answer(value: Any, values: dict[str, Any], reason: str | None = None) -> Any:
    """Map, validate every given value against its question (as the core does), resume."""
    mapping = map_interrupt(value)
    questions = {q.id: q for q in mapping.questions}
    checked = {qid: questions[qid].validate_answer(v) for qid, v in values.items()}
    plan = ResumePlan.from_json(mapping.plan.to_json())  # as stored in source_ref
    return resume_value(plan, checked, reason)


def test_plain_string_is_a_text_question_answered_with_the_string() -> None:
    mapping = map_interrupt("What is your name?")
    assert [(q.id, q.kind) for q in mapping.questions] == [("answer", QuestionKind.text)]
    assert mapping.questions[0].prompt == "What is your name?"
    assert mapping.title == "What is your name?"
    assert answer("What is your name?", {"answer": "Ada"}) == "Ada"


@pytest.mark.parametrize(
    ("value", "prompt_part"),
    [
        ({"question": "Branch name?", "hint": "x"}, "Branch name?"),
        ({"prompt": "P?"}, "P?"),
        ({"k": [1, 2]}, '"k"'),
        (None, "waiting for your input"),
        ("", "waiting for your input"),
        (42, "42"),
        ([1, 2, 3], "waiting for your input"),
        ([INBOX, INBOX], "action_request"),  # a list of two is no agent-inbox request
    ],
)
def test_other_values_are_plain_text_questions(value: Any, prompt_part: str) -> None:
    mapping = map_interrupt(value)
    assert mapping.plan.shape == "plain"
    assert mapping.questions[0].kind is QuestionKind.text
    assert prompt_part in mapping.questions[0].prompt
    RequestIn(title=mapping.title, questions=mapping.questions)  # always a valid request


def test_inbox_shows_every_allowed_action() -> None:
    mapping = map_interrupt([INBOX])
    by_id = {q.id: q for q in mapping.questions}
    assert by_id["decision"].kind is QuestionKind.choice
    assert by_id["decision"].options == ["Approve", "Edit", "Respond", "Ignore"]
    assert by_id["response"].kind is QuestionKind.text and not by_id["response"].required
    assert by_id["args"].kind is QuestionKind.edit and by_id["args"].default == {"command": "ls"}
    assert mapping.tool == "run_command"
    assert mapping.title == "Check the command"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"decision": "Approve"}, {"type": "accept", "args": None}),
        ({"decision": "Ignore"}, {"type": "ignore", "args": None}),
        ({"decision": "Respond", "response": "use -la"}, {"type": "response", "args": "use -la"}),
        ({"decision": "Edit", "args": {"command": "pwd"}},
         {"type": "edit", "args": {"action": "run_command", "args": {"command": "pwd"}}}),
        ({"decision": "Edit"},  # no edit given: the original arguments, unchanged
         {"type": "edit", "args": {"action": "run_command", "args": {"command": "ls"}}}),
    ],
)
def test_inbox_answers_are_a_list_of_one_human_response(
    values: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert answer([INBOX], values) == [expected]


def test_inbox_respond_without_text_uses_the_reason() -> None:
    assert answer([INBOX], {"decision": "Respond"}, reason="because") == [
        {"type": "response", "args": "because"}]


def test_bare_inbox_dict_is_answered_with_a_bare_response() -> None:
    assert answer(INBOX, {"decision": "Approve"}) == {"type": "accept", "args": None}


def test_inbox_accept_or_ignore_is_a_yes_no_question() -> None:
    value = [{**INBOX, "config": {"allow_accept": True, "allow_ignore": True}}]
    mapping = map_interrupt(value)
    assert [(q.id, q.kind) for q in mapping.questions] == [("decision", QuestionKind.confirm)]
    assert answer(value, {"decision": "yes"}) == [{"type": "accept", "args": None}]
    assert answer(value, {"decision": "no"}) == [{"type": "ignore", "args": None}]


def test_inbox_refuses_a_decision_it_does_not_allow() -> None:
    value = [{**INBOX, "config": {"allow_accept": True, "allow_respond": True}}]
    mapping = map_interrupt(value)
    with pytest.raises(InvalidAnswer):
        mapping.questions[0].validate_answer("Edit")
    with pytest.raises(ResumeError):
        resume_value(mapping.plan, {"decision": "Edit"})


def test_inbox_with_nothing_allowed_still_offers_approve() -> None:
    mapping = map_interrupt([{**INBOX, "config": {}}])
    assert mapping.questions[0].options == ["Approve"]


HITL = {
    "action_requests": [
        {"name": "write_file", "args": {"path": "a.md"}, "description": "Write notes"},
        {"name": "execute_sql", "args": {"query": "DELETE"}},
    ],
    "review_configs": [
        {"action_name": "write_file", "allowed_decisions": ["approve", "edit", "reject"]},
        {"action_name": "execute_sql", "allowed_decisions": ["approve", "reject"],
         "description": "Clean up"},
    ],
}


def test_hitl_request_asks_per_action() -> None:
    mapping = map_interrupt(HITL)
    kinds = {q.id: q.kind for q in mapping.questions}
    assert kinds == {
        "decision_0": QuestionKind.choice, "args_0": QuestionKind.edit, "message_0": QuestionKind.text,
        "decision_1": QuestionKind.confirm,  # approve/reject only: yes/no, reason = message
    }
    assert "Clean up" in mapping.questions[-1].prompt  # description from review_configs
    assert mapping.title == "Review tool calls: write_file, execute_sql"


def test_hitl_decisions_come_back_in_order() -> None:
    resumed = answer(
        HITL,
        {"decision_0": "Edit", "args_0": '{"path": "b.md"}', "decision_1": "no"},
        reason="too risky",
    )
    assert resumed == {"decisions": [
        {"type": "edit", "edited_action": {"name": "write_file", "args": {"path": "b.md"}}},
        {"type": "reject", "message": "too risky"},
    ]}
    assert answer(HITL, {"decision_0": "Reject", "message_0": "no", "decision_1": "yes"}) == {
        "decisions": [{"type": "reject", "message": "no"}, {"type": "approve"}]}
    assert answer(HITL, {"decision_0": "Approve", "decision_1": "no"}) == {
        "decisions": [{"type": "approve"}, {"type": "reject"}]}


def test_hitl_single_action_uses_plain_ids_and_the_arguments_key_it_was_given() -> None:
    value = {"action_requests": [{"name": "send", "arguments": {"to": "x"}}],
             "review_configs": [{"action_name": "send", "allowed_decisions": ["approve", "edit"]}]}
    mapping = map_interrupt(value)
    assert [q.id for q in mapping.questions] == ["decision", "args"]
    assert mapping.questions[0].options == ["Approve", "Edit"]
    assert answer(value, {"decision": "Edit", "args": {"to": "y"}}) == {
        "decisions": [{"type": "edit", "edited_action": {"name": "send", "arguments": {"to": "y"}}}]}


def test_hitl_configs_matched_by_name_when_not_aligned() -> None:
    value = {"action_requests": [{"name": "b", "args": {}}, {"name": "a", "args": {}}],
             "review_configs": [{"action_name": "a", "allowed_decisions": ["approve"]}]}
    mapping = map_interrupt(value)
    assert mapping.plan.actions[1].allowed == ("Approve",)
    assert mapping.plan.actions[0].allowed == ("Approve", "Edit", "Reject")  # no config: all


def test_many_actions_get_one_decision_for_all() -> None:
    count = MAX_ACTIONS_ONE_BY_ONE + 5
    value = {"action_requests": [{"name": f"t{i}", "args": {"i": i}} for i in range(count)],
             "review_configs": [{"action_name": f"t{i}", "allowed_decisions": ["approve", "reject"]}
                                for i in range(count)]}
    mapping = map_interrupt(value)
    RequestIn(title=mapping.title, questions=mapping.questions)
    assert mapping.plan.batch
    resumed = answer(value, {"decision": "no", "message": "stop"})
    assert resumed == {"decisions": [{"type": "reject", "message": "stop"}] * count}


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"k": value}
    return value


DEEP = _deep(40)


@pytest.mark.parametrize(
    "hostile",
    [
        {"action_request": "nope", "config": {}},
        {"action_requests": "x"},
        {"action_requests": [{"name": 3}]},
        {"action_requests": []},
        [{"action_request": {"action": "x" * 5000, "args": "not-a-dict"}, "config": {"allow_edit": True}}],
        {"action_requests": [{"name": "n", "args": DEEP}],
         "review_configs": "bad"},
        "x" * 100_000,
    ],
)
def test_hostile_values_still_make_a_valid_request(hostile: Any) -> None:
    mapping = map_interrupt(hostile)
    RequestIn(title=mapping.title, questions=mapping.questions,
              context={"interrupt": safe_context_value(hostile)})


def test_resume_plan_from_garbage_is_a_resume_error() -> None:
    for garbage in ({}, {"shape": "weird"}, {"shape": "hitl", "actions": [{"nope": 1}]}):
        with pytest.raises(ResumeError):
            ResumePlan.from_json(garbage)


def test_plain_resume_needs_text() -> None:
    with pytest.raises(ResumeError):
        resume_value(ResumePlan(shape="plain"), {"answer": 3})
