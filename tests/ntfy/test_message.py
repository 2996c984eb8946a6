"""The ntfy messages as pure functions: targets with their own priority and tags, hostile
target spellings, the buttons a request gets, and what replaces it once closed."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from adapters.ntfy.message import BadTarget, Target, closed_message, handle_of, parse_target, request_message
from adapters.ntfy.settings import NtfySettings
from bridge.models import Answer, Request, RequestState, Responder
from bridge.questions import Question, QuestionKind

CONFIRM = [Question(id="ok", kind=QuestionKind.confirm, prompt="Deploy?")]

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def request(**fields: object) -> Request:
    return Request.model_validate({"id": "r_1", "source": "webhook", "title": "Deploy api",
                                   "created_at": NOW, "updated_at": NOW, "questions": CONFIRM,
                                   **fields})


def test_a_target_carries_the_routes_priority_and_tags() -> None:
    assert parse_target("ntfy:ops") == Target("ops")
    assert parse_target("ntfy:ops?priority=5&tags=warning,rocket") == Target("ops", 5, ("warning", "rocket"))
    assert handle_of("ntfy:ops?priority=5") == "ntfy:ops"


@pytest.mark.parametrize("target", [
    "ntfy:", "ntfy:a/b", "ntfy:" + "x" * 65, "ntfy:ops?priority=9", "ntfy:ops?priority=high",
    "ntfy:ops?color=red", "ntfy:ops?priority=1&priority=2", "ntfy:ops?tags=<script>", "ntfy:../admin",
    "ntfy:ops\nX-Injected: 1",
])
def test_hostile_targets_are_refused(target: str) -> None:
    with pytest.raises(BadTarget):
        parse_target(target)


def test_a_yes_no_request_gets_http_buttons_that_post_a_decision() -> None:
    message = request_message(request(), Target("ops", 5), tap_url="https://b.example/ntfy/tap/T",
                              open_url="https://b.example/inbox/a/L", priority=3, tags=["robot"])
    approve, reject, open_ = message["actions"]
    assert (approve["action"], approve["method"], json.loads(approve["body"])) == ("http", "POST",
                                                                                   {"decision": "approve"})
    assert json.loads(reject["body"]) == {"decision": "reject"} and open_["action"] == "view"
    assert message["priority"] == 5 and message["tags"] == ["robot"] and message["sequence_id"] == "hitl-r_1"


def test_other_kinds_and_secrets_get_open_only() -> None:
    text = request(questions=[Question(id="t", kind=QuestionKind.text, prompt="Why?")])
    message = request_message(text, Target("ops"), tap_url="https://b.example/ntfy/tap/T",
                              open_url="https://b.example/inbox/a/L", priority=3, tags=[])
    assert [a["label"] for a in message["actions"]] == ["Open"]


def test_an_escalated_request_is_sent_urgent_and_a_closed_one_quietly() -> None:
    escalated = request_message(request(escalation_level=1), Target("ops"), tap_url=None, open_url="u",
                                priority=2, tags=[])
    assert escalated["priority"] == 4 and escalated["title"].startswith("Escalated")
    answered = request(state=RequestState.answered, answer=Answer(
        values={"ok": "no"}, responder=Responder(platform="ntfy", user_id="ops", name="ops"), via="ntfy",
        answered_at=NOW))
    closed = closed_message(answered, Target("ops"), open_url="u")
    assert closed["priority"] == 2 and closed["actions"] == [] and closed["tags"] == ["x"]
    assert closed["title"].startswith("Rejected by ops")


@pytest.mark.parametrize("section", [{"url": "ftp://x"}, {"url": "https://ntfy.sh?x=1"}, {"priority": 7},
                                     {"tags": ["a,b"]}, {"colour": "red"}])
def test_bad_sections_are_refused(section: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        NtfySettings.model_validate(section)
