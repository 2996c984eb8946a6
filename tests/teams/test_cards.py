"""Cards and the strict readers, pure: no I/O."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.teams.answers import ForgedAction, request_id_of, values_of
from adapters.teams.cards import APPROVE, REJECT, SUBMIT, request_card, secret_dialog
from adapters.teams.references import targets_of
from adapters.teams.spec import SPEC
from adapters.teams.targets import BadTarget, parse_target
from bridge.models import Request
from bridge.specs import HandleError


def request(**extra: Any) -> Request:
    now = datetime(2026, 5, 1, 14, 2, tzinfo=UTC)
    body: dict[str, Any] = {"id": "r1", "title": "Deploy", "created_at": now, "updated_at": now,
                            "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}], **extra}
    return Request.model_validate(body)


def actions(card: dict[str, Any]) -> list[dict[str, Any]]:
    return list(card.get("actions", []))


def test_buttons_are_universal_actions_and_no_card_holds_a_url() -> None:
    for r in (request(), request(questions=[{"id": "pw", "kind": "secret", "prompt": "Password"}]),
              request(questions=[{"id": "c", "kind": "choice", "prompt": "?", "options": ["a", "b"]}])):
        for personal in (False, True):
            card = request_card(r, personal=personal)
            text = json.dumps(card)
            assert "Action.OpenUrl" not in text and "https://" not in text.replace(
                "http://adaptivecards.io/schemas/adaptive-card.json", "")
            assert all(a["type"] in ("Action.Execute", "Action.Submit") for a in actions(card))


def test_a_secret_is_never_an_input_of_a_card_and_the_dialog_masks_it() -> None:
    r = request(questions=[{"id": "pw", "kind": "secret", "prompt": "Password"}])
    for personal in (False, True):
        assert not any(str(b.get("type")).startswith("Input.") for b in request_card(r, personal=personal)["body"])
    assert actions(request_card(r))[0]["verb"] == "hitl.private"
    field = secret_dialog(r)["task"]["value"]["card"]["content"]["body"][1]
    assert field["style"] == "Password"


def test_a_closed_card_says_who_decided_and_has_no_buttons() -> None:
    r = request(state="answered", answer={"values": {"ok": "yes"}, "responder": {"platform": "teams",
                "user_id": "a", "name": "Ana"}, "via": "teams", "answered_at": datetime(2026, 5, 1, 14, 2, tzinfo=UTC)})
    card = request_card(r)
    assert "actions" not in card and "✅ Approved by Ana at 2026-05-01 14:02" in json.dumps(card, ensure_ascii=False)


def test_values_are_read_strictly() -> None:
    r = request()
    assert values_of(r, APPROVE, {}) == {"ok": "yes"} and values_of(r, REJECT, {}) == {"ok": "no"}
    with pytest.raises(ForgedAction):
        values_of(r, "hitl.other", {})
    with pytest.raises(ForgedAction):
        values_of(request(questions=[{"id": "t", "kind": "text", "prompt": "?"}]), SUBMIT, {"answer.t": ["x"]})
    with pytest.raises(ForgedAction):
        values_of(request(questions=[{"id": "t", "kind": "text", "prompt": "?"}]), SUBMIT, {"answer.t": "x" * 6000})
    for data in (None, [], {"request_id": 5}, {"request_id": ""}, {"request_id": "x" * 65}):
        with pytest.raises(ForgedAction):
            request_id_of(data)


def test_targets_and_handles() -> None:
    assert parse_target("teams:user:AAAAAAAA-0000-0000-0000-000000000001").value == \
        "aaaaaaaa-0000-0000-0000-000000000001"
    assert parse_target("teams:channel:19:x@thread.tacv2").value == "19:x@thread.tacv2"
    for bad in ("teams:user:ana", "teams:team:1", "teams:chat:", "teams:chat:a b", "teams:chat:" + "x" * 400):
        with pytest.raises(BadTarget):
            parse_target(bad)
    assert SPEC.normalize("AAAAAAAA-0000-0000-0000-000000000001") == "aaaaaaaa-0000-0000-0000-000000000001"
    with pytest.raises(HandleError):
        SPEC.normalize("29:abc")


def test_references_are_read_only_from_whole_activities() -> None:
    base = {"serviceUrl": "https://smba.example/", "conversation": {"id": "19:c;messageid=1",
            "conversationType": "channel"}, "channelData": {"channel": {"id": "19:c"}, "tenant": {"id": "t"}}}
    found = targets_of(base)
    assert found is not None and found[1] == ["teams:channel:19:c"] and found[0].conversation_id == "19:c"
    for broken in ({}, {"serviceUrl": 5, "conversation": {"id": "x"}}, {**base, "conversation": "x"},
                   {**base, "conversation": {"id": "y" * 600}}):
        assert targets_of(broken) is None
    no_channel_data = targets_of({**base, "channelData": []})  # the channel is read from the conversation
    assert no_channel_data is not None and no_channel_data[1] == ["teams:channel:19:c"]
