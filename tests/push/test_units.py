"""Web Push pure parts: the payload (tag, buttons, size), the tap body parser, the push
services a subscription may name, and the device names people see."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from adapters.push.payload import MAX_PAYLOAD, closed_payload, request_payload
from adapters.push.settings import PushSettings
from adapters.push.subscriptions import allowed_host, device_name
from adapters.taps import TapRefused, parse_tap
from bridge.action_tokens import Decision
from bridge.models import Request
from bridge.questions import Question, QuestionKind

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def request(**fields: object) -> Request:
    return Request.model_validate({"id": "r_1", "source": "webhook", "title": "Deploy api",
                                   "created_at": NOW, "updated_at": NOW,
                                   "questions": [Question(id="ok", kind=QuestionKind.confirm, prompt="Deploy?")],
                                   **fields})


def test_a_payload_fits_a_push_message_however_long_the_request() -> None:
    huge = request(title="T" * 500, description="D" * 20_000, agent="😀" * 200)
    body = request_payload(huge, tap_url="/inbox/push/tap/" + "x" * 43, open_url="/inbox/a/" + "y" * 43)
    data = json.loads(body)
    assert len(body) <= MAX_PAYLOAD and data["tag"] == "hitl-r_1" and len(data["title"]) <= 120
    assert [a["action"] for a in data["actions"]] == ["approve", "reject"]


def test_secret_requests_get_open_and_closed_payloads_have_no_buttons() -> None:
    secret = request(questions=[Question(id="pw", kind=QuestionKind.secret, prompt="Password?")])
    data = json.loads(request_payload(secret, tap_url="/t", open_url="/o"))
    assert data["actions"] == [{"action": "open", "title": "Open"}] and data["tap"] is None
    closed = json.loads(closed_payload(request(state="cancelled"), open_url="/o"))
    assert closed["kind"] == "closed" and closed["actions"] == [] and closed["tag"] == "hitl-r_1"


@pytest.mark.parametrize("body", [b"", b"approve", b"[]", b'{"decision": "APPROVE"}', b'{"decision": true}',
                                  b'{"decision": "approve", "as": "push:bo"}', b"\xff\xfe", b"{" * 5000])
def test_a_tap_body_is_one_decision_and_nothing_else(body: bytes) -> None:
    with pytest.raises(TapRefused):
        parse_tap(body)
    assert parse_tap(b'{"decision": "reject"}') is Decision.reject


def test_subscriptions_may_name_only_the_configured_push_services() -> None:
    services = PushSettings().push_services
    assert allowed_host("fcm.googleapis.com", services) and allowed_host("wns2-by3p.notify.windows.com", services)
    assert not allowed_host("fcm.googleapis.com.evil.example", services)
    assert not allowed_host("notify.windows.com.evil.example", services)
    assert not allowed_host("169.254.169.254", services)
    with pytest.raises(ValueError):
        PushSettings.model_validate({"push_services": ["https://fcm.googleapis.com/"]})
    with pytest.raises(ValueError):
        PushSettings.model_validate({"subject": "ops@example.com"})


def test_devices_are_named_for_people() -> None:
    assert device_name("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4) AppleWebKit/605 Version/17.4 Mobile Safari/604.1") \
        == "Safari on iPhone"
    assert device_name("Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 Chrome/131 Safari/537.36 Edg/131") \
        == "Edge on Windows"
    assert device_name("") == "a browser"
