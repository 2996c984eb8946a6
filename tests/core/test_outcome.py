"""One closed request, worded once: the core's outcome (`bridge.outcome`) and every surface
that shows it (Slack, Telegram, email, MCP, the inbox, the "already closed" refusals) say
the same sentence; the surfaces only decorate it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from email.headerregistry import Address
from typing import Any

import pytest

from adapters.email.message import request_mail
from adapters.mcp.results import result_for
from adapters.slack.blocks import outcome_text, request_blocks
from adapters.slack.interactions import refusal_text
from adapters.telegram.handlers import closed_note
from adapters.telegram.render import closed_text
from adapters.web.present import decision
from adapters.web.views import closed_message
from bridge.cli.answer import closed_text as cli_closed_text
from bridge.http.views import request_view
from bridge.models import Answer, Question, QuestionKind, Request, RequestState, Responder
from bridge.outcome import OutcomeKind, closed_error, outcome_of

AT = datetime(2026, 5, 1, 14, 2, tzinfo=UTC)
ANA = Responder(platform="web", user_id="ana", name="ana")
CONFIRM = Question(id="ok", kind=QuestionKind.confirm, prompt="Deploy?")
CHOICE = Question(id="region", kind=QuestionKind.choice, prompt="Where?", options=["eu", "us"])
SECRET = Question(id="pw", kind=QuestionKind.secret, prompt="Password?")
TEXT = Question(id="note", kind=QuestionKind.text, prompt="Anything?")


def closed(*questions: Question, values: dict[str, Any] | None = None, via: str = "web",
           state: RequestState = RequestState.delivered, error: str | None = None, reason: str | None = None,
           who: Responder = ANA) -> Request:
    answer = None if values is None else Answer(values=values, responder=who, via=via, answered_at=AT,
                                                reason=reason)
    return Request(id="r_1", title="Deploy api", questions=list(questions), state=state, answer=answer,
                   error=error, created_at=AT, updated_at=AT, labels={"mcp_call": "ask_human"})


def surfaces(request: Request) -> dict[str, str]:
    """Every place a person (or a model) reads how `request` ended."""
    mail = request_mail(request, to=Address(addr_spec="bo@example.com"), sender=Address(addr_spec="hitl@example.com"),
                        link="https://hitl.example.com/a", kind="resolved", thread=None, now=AT)
    text_part = mail.get_body(("plain",))
    html_part = mail.get_body(("html",))
    assert text_part is not None and html_part is not None
    inbox = decision(request)
    assert inbox is not None
    mcp = result_for(json.loads(json.dumps(request_view(request))))
    return {
        "slack": outcome_text(request),
        "slack blocks": json.dumps(request_blocks(request), ensure_ascii=False),
        "telegram": closed_text(request),
        "email text": text_part.get_content(),
        "email html": html_part.get_content(),
        "inbox": inbox.sentence,
        "mcp": str((mcp.structured_content or {}).get("summary")),  # what the model reads
    }


def test_a_delivered_rejection_reads_the_same_everywhere() -> None:
    request = closed(CONFIRM, values={"ok": "no"}, reason="change freeze")
    ended = outcome_of(request)
    assert ended is not None and ended.kind is OutcomeKind.rejected and ended.headline == "Rejected by ana"
    assert ended.sentence == "Rejected by ana at 2026-05-01 14:02 UTC: change freeze."
    for surface, text in surfaces(request).items():
        assert "Rejected by ana" in text, surface
        assert "Answered by" not in text and "delivered" not in text, surface


@pytest.mark.parametrize(("request_", "words"), [
    (closed(CONFIRM, values={"ok": "yes"}), "Approved by ana"),
    (closed(TEXT, values={"note": "fine"}), "Answered by ana"),
    (closed(CONFIRM, TEXT, values={"ok": "yes", "note": "x"}), "Answered by ana"),
    (closed(SECRET, values={"pw": "hunter2"}), "Secret provided by ana"),
    (closed(CONFIRM, values={"ok": "no"}, via="timeout", state=RequestState.expired,
            who=Responder(platform="timeout", user_id="timeout")), "Expired: rejected by the timeout rule"),
    (closed(CONFIRM, state=RequestState.expired), "Expired without an answer"),
    (closed(CONFIRM, state=RequestState.cancelled, error="run deleted"), "Cancelled"),
    (closed(CONFIRM, state=RequestState.failed, error="engine gone"), "Failed"),
])
def test_every_ending_has_one_wording_on_the_chat_mail_and_inbox(request_: Request, words: str) -> None:
    ended = outcome_of(request_)
    assert ended is not None and ended.headline == words
    for surface, text in surfaces(request_).items():
        if surface == "mcp" and not ended.answered:
            continue  # a model reads why nothing was answered, in its own words (tested in tests/mcp)
        assert words in text, surface
    assert "hunter2" not in json.dumps(surfaces(request_))


def test_a_chosen_option_is_named_and_only_decorated() -> None:
    request = closed(CHOICE, values={"region": "eu"})
    ended = outcome_of(request)
    assert ended is not None and ended.headline == "“eu” chosen by ana"
    assert "*eu* chosen by ana (web)" in outcome_text(request)  # Slack: bold, and the platform
    assert "“eu” chosen by ana" in closed_text(request)


def test_open_requests_have_no_outcome() -> None:
    assert outcome_of(closed(CONFIRM, state=RequestState.posted)) is None


def test_already_closed_reads_the_same_everywhere() -> None:
    """A second answer to a delivered request: "already answered by ana", never "delivered"."""
    request = closed(CONFIRM, values={"ok": "no"})
    core = str(closed_error(request))
    assert core == "already answered by ana at 2026-05-01 14:02 UTC"
    assert closed_message(request) == core
    assert closed_note(request) == "Already answered by ana at 2026-05-01 14:02 UTC."
    assert "already answered by ana" in refusal_text(closed_error(request))
    assert cli_closed_text(request_view(request)).startswith("r_1 is already answered: ")
    timeout = closed(CONFIRM, values={"ok": "yes"}, via="timeout", who=Responder(platform="timeout", user_id="t"))
    assert str(closed_error(timeout)).startswith("already expired")
    assert str(closed_error(closed(CONFIRM, state=RequestState.cancelled))) == "already cancelled"
