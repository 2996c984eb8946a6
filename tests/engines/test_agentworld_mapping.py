"""agent-world prompts → questions, answers → hitl/respond bodies (no network)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.agentworld.mapping import InvalidPrompt, NoAnswer, map_prompt, respond_body
from bridge.models import Answer, QuestionKind, Responder
from tests.engines.fake_agentworld import select_prompt


def _answer(values: dict[str, Any]) -> Answer:
    return Answer(
        values=values, responder=Responder(platform="web", user_id="u"), via="web", answered_at=datetime.now(UTC)
    )


def test_single_select_one_question_answers_with_option_id() -> None:
    p = select_prompt([("env", "Which environment?", [("stg", "Staging"), ("prd", "Production")])], request_id="r1")
    m = map_prompt("w", "c", p)
    q = m.request.questions[0]
    assert (q.kind, q.options, q.prompt) == (QuestionKind.choice, ["Staging", "Production"], "Which environment?")
    assert respond_body(m.ref, _answer({"q1": "Production"})) == {"requestId": "r1", "chatId": "c", "optionId": "prd"}
    assert m.request.external_id == "w:c:r1"


def test_multiple_select_answers_per_question_with_option_ids() -> None:
    p = select_prompt(
        [("a", "Pick", [("1", "One"), ("2", "Two")]), ("b", "More", [("x", "X")])], multiple=True, request_id="r2"
    )
    m = map_prompt("w", "c", p)
    assert [q.kind for q in m.request.questions] == [QuestionKind.multi_choice] * 2
    body = respond_body(m.ref, _answer({"q1": ["One", "Two"], "q2": ["X"]}))
    assert body == {
        "requestId": "r2",
        "chatId": "c",
        "answers": [{"questionId": "a", "optionIds": ["1", "2"]}, {"questionId": "b", "optionIds": ["x"]}],
    }


def test_allow_skip_adds_a_skip_control() -> None:
    p = select_prompt([("a", "Pick", [("1", "Skip"), ("2", "Two")])], allow_skip=True, request_id="r3")
    m = map_prompt("w", "c", p)
    assert m.request.questions[0].options == ["Skip", "Two", "Skip (2)"]
    assert respond_body(m.ref, _answer({"q1": "Skip (2)"})) == {"requestId": "r3", "chatId": "c", "skipped": True}
    assert respond_body(m.ref, _answer({"q1": "Skip"})) == {"requestId": "r3", "chatId": "c", "optionId": "1"}
    assert respond_body(m.ref, None) == {"requestId": "r3", "chatId": "c", "skipped": True}


def test_option_descriptions_header_and_metadata_are_shown() -> None:
    options = [("yes_once", "Yes once", "Run this command once."), ("no", "No")]
    p = select_prompt([("approval", "Run `make clean`?", options)], request_id="r4",
                      metadata={"tool": "shell_cmd", "command": "make clean"}, agent="builder")
    m = map_prompt("w", "c", p)
    q = m.request.questions[0]
    assert q.help_text == "• Yes once — Run this command once."
    assert (m.request.title, m.request.agent) == ("Approval", "builder")
    assert m.request.context["details"] == {"tool": "shell_cmd", "command": "make clean"}
    generic = select_prompt([("question-1", "Go on?", [("y", "Yes")])], agent="builder")
    generic["questions"][0]["header"] = "Human input required"
    mapped = map_prompt("w", "c", generic)
    assert mapped.request.title == "builder needs a decision" and mapped.request.questions[0].help_text == ""


def test_answers_that_fit_no_option_are_refused() -> None:
    m = map_prompt("w", "c", select_prompt([("a", "Pick", [("1", "One")])], request_id="r5"))
    with pytest.raises(NoAnswer):
        respond_body(m.ref, _answer({"q1": "Two"}))
    with pytest.raises(NoAnswer):
        respond_body(m.ref, None)  # no Skip allowed


@pytest.mark.parametrize(
    "prompt",
    [
        None,
        [],
        {"questions": []},
        {"requestId": "r"},
        {"requestId": "r", "questions": [{"id": "a", "options": []}]},
        {"requestId": "r", "options": [1, 2]},
        {"requestId": "r", "prompt": "Go?", "options": ["yes", "no"]},  # before agent-world 0.16
        {"requestId": "x" * 200, "questions": [{"id": "a", "options": [{"id": "1", "label": "One"}]}]},
    ],
)
def test_unusable_prompts_are_refused(prompt: Any) -> None:
    with pytest.raises(InvalidPrompt):
        map_prompt("w", "c", prompt)


def test_refusals_are_classified_in_one_place() -> None:
    """The reasons agent-world's `hitl/respond` gives (core/hitl.ts, server/api.ts)."""
    from adapters.agentworld.refusals import Refusal, classify

    replay = [
        "No pending HITL request found for requestId 'call_1'.",
        "HITL request 'call_1' is pending in chat messages but the chat is not yet activated on this server. "
        "Call POST /worlds/ops/setChat/c1 to activate, then retry this request.",
    ]
    final = [
        "Request 'call_1' belongs to chat 'c1', not 'c2'.",
        "Request 'call_1' does not allow skipping.",
        "answers are required when skipped is false.",
        "Each HITL answer requires a questionId.",
        "Invalid questionId 'q' for requestId 'call_1'.",
        "Duplicate answer for questionId 'q'.",
        "Answer for questionId 'q' requires at least one optionId.",
        "Invalid option 'x' for questionId 'q'.",
        "Question 'q' accepts exactly one option.",
        "Missing answer for questionId 'q'.",
        "worldId, requestId, and either answers, skipped, or optionId are required.",
        "something this version has never seen",
        "",
    ]
    assert [classify(r) for r in replay] == [Refusal.REPLAY_CHAT] * len(replay)
    assert [classify(r) for r in final] == [Refusal.FINAL] * len(final)
