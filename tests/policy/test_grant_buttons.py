"""The grant buttons as each channel builds them, with no network: within each platform's
limits (Slack action ids and values, Telegram's 64-byte callback_data), parsed strictly
back, and worded from the core once ("Allowed for 1 hour by …", "Approved automatically by
rule …"). Hostile keys and over-long patterns are refused before the core is asked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from adapters.slack.blocks import grant_key, outcome_text, request_blocks
from adapters.slack.grant_modal import grant_modal, read_pattern
from adapters.slack.modals import ModalOrigin
from adapters.telegram import keyboards as kb
from adapters.telegram.render import outcome_line
from bridge.config_routes import Route
from bridge.errors import GrantRefused
from bridge.models import Answer, GrantMade, Responder
from bridge.outcome import outcome_of
from bridge.policy import GrantOffer, GrantScope, grant_offers
from bridge.policy.pressed import MAX_KEY_CHARS, approving_values, chosen_grant, granted_words, offer_for_key
from tests.fakes.slack_api import check_blocks, check_view
from tests.slack.factories import NOW, answered, make_request

BASH = {"tool": "Bash", "session": "s-1", "context": {"command": "npm test -- --watch=false"}}


def offers() -> list[GrantOffer]:
    return grant_offers(make_request(**BASH), Route(name="default"))


def test_slack_grant_buttons_fit_and_name_their_offer() -> None:
    request = make_request(**BASH)
    blocks = request_blocks(request, offers=offers())
    assert check_blocks(blocks, 50) is None
    actions = next(b for b in blocks if b["type"] == "actions")["elements"]
    assert [e["text"]["text"] for e in actions] == ["Allow once", "Allow for this session", "Allow for 1 hour",
                                                    "Always allow this", "Reject"]
    for element in actions[1:4]:
        key = grant_key(element["action_id"])
        assert key == element["value"] and len(element["value"]) <= MAX_KEY_CHARS
        assert offer_for_key(offers(), key).key == key
    assert [e["text"]["text"] for e in next(b for b in request_blocks(request) if b["type"] == "actions")["elements"]] \
        == ["Approve", "Reject"]  # no offers: as before
    view = grant_modal(request, offers()[-1], ModalOrigin(request.id, "C1", "1.2"))
    assert check_view(view) is None
    assert read_pattern({"pattern": {"v": {"type": "plain_text_input", "value": "Bash(npm test:*)"}}}) \
        == "Bash(npm test:*)"
    assert read_pattern({"pattern": {"v": {"value": 7}}}) is None and read_pattern("junk") is None


def test_telegram_grant_callbacks_fit_and_parse_back() -> None:
    markup = kb.confirm_keyboard("A" * kb.TOKEN_LENGTH, offers())
    buttons = [b for row in markup.inline_keyboard for b in row]
    assert [b.text for b in buttons] == ["✅ Allow once", "❌ Reject", "🔁 Allow for this session",
                                         "🕐 Allow for 1 hour", "♾ Always allow this"]
    for button, offer in zip(buttons[2:], offers(), strict=True):
        data = str(button.callback_data)
        assert len(data.encode()) <= kb.CALLBACK_DATA_LIMIT
        parsed = kb.parse_callback(data)
        assert parsed.action == kb.GRANT and parsed.grant == offer.key
    longest = kb.callback_data("A" * kb.TOKEN_LENGTH, kb.GRANT + kb.grant_code("span:99999999"))
    assert kb.parse_callback(longest).grant == "span:99999999"
    for forged in ("A" * 16 + "|g", "A" * 16 + "|gz", "A" * 16 + "|gh", "A" * 16 + "|gh123456789",
                   "A" * 16 + "|gs1", "A" * 16 + "|ga|x", "A" * 16 + "|gh" + "1" * 60):
        with pytest.raises(kb.ForgedCallback):
            kb.parse_callback(forged)


def test_pressed_keys_must_be_offered_and_patterns_one_line() -> None:
    assert chosen_grant(offers(), "span:3600").span_s == 3600
    assert chosen_grant(offers(), "span:3600", "ignored for a span").pattern is None
    assert chosen_grant(offers(), "always").pattern is None  # the offer's default: the core's own
    assert chosen_grant(offers(), "always", "Bash(npm test:*)").pattern is None
    assert chosen_grant(offers(), "always", "  Bash(npm test -- --watch=false) ").pattern \
        == "Bash(npm test -- --watch=false)"
    for key in ("once", "forever", "span:60", "span:3600 ", "SPAN:3600", "x" * 5000, ""):
        if key.strip() == "span:3600":
            continue
        with pytest.raises(GrantRefused):
            chosen_grant(offers(), key)
    for pattern in ("Bash(a)\nBash(*)", "x" * 1001, "Bash(\x00)"):
        with pytest.raises(GrantRefused):
            chosen_grant(offers(), "always", pattern)
    request = make_request(**BASH)
    assert approving_values(request) == {request.questions[0].id: "yes"}
    with pytest.raises(GrantRefused):
        two = ({"id": "a", "kind": "confirm", "prompt": "a"}, {"id": "b", "kind": "text", "prompt": "b"})
        approving_values(make_request(*two, **BASH))
    assert [o.key for o in grant_offers(make_request(**{**BASH, "session": None}), Route(name="d"))] \
        == ["span:3600", "always"]
    assert grant_offers(make_request(**BASH), Route(name="q", quorum=2)) == []


def test_the_outcome_says_what_was_granted_and_what_decided_automatically() -> None:
    request = make_request(**BASH)
    made = GrantMade(scope=GrantScope.span.value, pattern="Bash", span_s=3600.0,
                     expires_at=NOW + timedelta(hours=1), grant_id="g_1")
    approved = answered(request, {request.questions[0].id: "yes"})
    assert approved.answer is not None
    granted = approved.model_copy(update={"answer": approved.answer.model_copy(update={"grant": made})})
    assert outcome_of(granted).headline == "Allowed for 1 hour by alice"  # type: ignore[union-attr]
    assert "Allowed for 1 hour by <@U0ALICE>" in outcome_text(granted) and "until" in outcome_text(granted)
    assert "Allowed for 1 hour by alice" in outcome_line(granted) and "until" in outcome_line(granted)
    assert granted_words("always") == "Always allowed" and granted_words("span", 86400) == "Allowed for 1 day"
    for platform, name, words in (("policy", "reads", "Approved automatically by rule reads"),
                                  ("grant", "g_9", "Approved automatically by grant g_9")):
        auto = request.model_copy(update={"state": approved.state, "answer": Answer(
            values={request.questions[0].id: "yes"}, responder=Responder(platform=platform, user_id=name),
            via=platform, answered_at=datetime(2026, 5, 1, tzinfo=UTC))})
        assert outcome_of(auto).headline == words  # type: ignore[union-attr]
        assert ":robot_face:" in outcome_text(auto) and "🤖" in outcome_line(auto)
