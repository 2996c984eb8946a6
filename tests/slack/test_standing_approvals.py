"""Standing approvals in Slack: the grant buttons next to "Allow once", pressed by a simulated
person against the fake Slack and the real daemon. After "Allow for 1 hour" a matching call
is allowed by the grant with no message to anyone, and a call of another tool is asked;
"Always allow this" opens a modal whose pattern may be narrowed, never widened. Forged,
oversized and stale button values, a key naming a scope not offered, and a person outside
the responders are refused, with nothing granted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bridge.models import RequestState
from tests.fakes.slack_api import FakeSlack
from tests.harness import wait_for
from tests.slack.conftest import CHANNEL, SlackBridge, slack_bridge


def call(command: str, *, tool: str = "Bash", session: str | None = "sess-1") -> dict[str, Any]:
    return {"title": f"Allow {tool}: {command}", "engine": "claude", "tool": tool, "session": session,
            "context": {"command": command},
            "questions": [{"id": "approve", "kind": "confirm", "prompt": "Allow?"}]}


def labels(message: dict[str, Any]) -> list[str]:
    actions = next(b for b in message["blocks"] if b.get("type") == "actions")
    return [e["text"]["text"] for e in actions["elements"]]


def forged(person: Any, message: dict[str, Any], action_id: str, value: str) -> dict[str, Any]:
    """A click whose action id and value were made up (not from the message)."""
    payload: dict[str, Any] = person.block_actions(message, "hitl:approve")
    payload["actions"][0].update(action_id=action_id, value=value)
    return payload


async def ephemeral(b: SlackBridge, needle: str) -> str:
    found = await wait_for(lambda: next((c.args["text"] for c in b.fake.calls_of("chat.postEphemeral")
                                         if needle in str(c.args.get("text"))), None), 5)
    return str(found)


async def test_allow_for_one_hour_then_a_matching_call_is_allowed_with_no_message(
        tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(call("npm test"))
        message = await b.message_of(rid)
        assert labels(message) == ["Allow once", "Allow for this session", "Allow for 1 hour",
                                   "Always allow this", "Reject"]
        response = await b.person.click(message, "hitl:grant:span:3600")
        assert response.status_code == 200
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.values == {"approve": "yes"}
        made = request.answer.grant
        assert made is not None and made.scope == "span" and made.pattern == "Bash" and made.grant_id
        assert made.expires_at is not None
        assert round((made.expires_at - request.answer.answered_at).total_seconds()) == 3600
        key = (message["channel"], message["ts"])
        text = await wait_for(lambda: "Allowed for 1 hour" in json.dumps(fake.messages[key])
                              and json.dumps(fake.messages[key]), 5)
        assert "Allowed for 1 hour by <@U0ALICE>" in text and "until" in text
        grants = await b.daemon.service.list_grants()
        assert [(g.id, g.granted_by, g.via) for g in grants] == [(made.grant_id, "slack:U0ALICE", "slack")]

        posted_before = len(fake.channel_messages(CHANNEL))
        again = await b.create(call("git status"))  # another Bash call: covered
        allowed = await b.stored(again)
        assert allowed.state is not RequestState.pending and allowed.answer is not None
        assert allowed.answer.responder.platform == "grant" and allowed.answer.responder.user_id == made.grant_id
        other = await b.create(call("./src/app.py", tool="Edit"))  # another tool: asked
        await b.message_of(other)
        assert (await b.stored(other)).is_open
        ids = [(m.get("metadata") or {}).get("event_payload", {}).get("request_id")
               for m in fake.channel_messages(CHANNEL)]
        assert again not in ids and len(ids) == posted_before + 1


async def test_always_allow_opens_a_modal_that_narrows_but_never_widens(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(call("npm test -- --watch=false"))
        message = await b.message_of(rid)
        assert (await b.person.click(message, "hitl:grant:always")).status_code == 200
        view = await b.latest_view(1)
        assert view["callback_id"] == "hitl:grant"
        field = next(x for x in view["blocks"] if x.get("block_id") == "pattern")
        assert field["element"]["initial_value"] == "Bash(npm test:*)"
        assert (await b.stored(rid)).is_open  # nothing recorded by opening it

        wider = await b.person.submit(view, {"pattern": "Bash(*)"})
        assert wider.status_code == 200 and wider.json()["response_action"] == "errors"
        assert "pattern" in wider.json()["errors"]
        other_tool = await b.person.submit(view, {"pattern": "Edit(./src/**)"})
        assert other_tool.json()["response_action"] == "errors"
        assert (await b.stored(rid)).is_open and await b.daemon.service.list_grants() == []

        narrowed = await b.person.submit(view, {"pattern": "Bash(npm test -- --watch=false)"})
        assert narrowed.status_code == 200 and not narrowed.content.strip(b"{}")
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.grant is not None
        assert request.answer.grant.pattern == "Bash(npm test -- --watch=false)"
        [grant] = await b.daemon.service.list_grants()
        assert grant.scope == "always" and grant.expires_at is None


async def test_forged_oversized_and_unoffered_grant_buttons_grant_nothing(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(call("make build", session=None))  # no session: "for this session" is not offered
        message = await b.message_of(rid)
        assert "Allow for this session" not in labels(message)
        cases = [
            ("hitl:grant:session", "session", "not offered"),      # a scope this request does not offer
            ("hitl:grant:span:99999999", "span:99999999", "not offered"),  # a span nobody offered
            ("hitl:grant:forever", "forever", "not offered"),      # a key naming an unknown scope
            ("hitl:grant:span:3600", "span:60", "not valid"),      # value and action disagree
            ("hitl:grant:" + "x" * 3000, "x" * 3000, "not valid"),  # oversized
        ]
        for action_id, value, said in cases:
            response = await b.person.send(forged(b.person, message, action_id, value))
            assert response.status_code == 200
            await ephemeral(b, said)
        assert (await b.stored(rid)).is_open and await b.daemon.service.list_grants() == []


async def test_a_person_outside_the_responders_cannot_grant(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake, route={"responders": ["slack:U0BOB"]}) as b:
        rid = await b.create(call("npm test"))
        message = await b.message_of(rid)
        assert (await b.person.click(message, "hitl:grant:span:3600")).status_code == 200
        await ephemeral(b, "not allowed")
        assert (await b.person.click(message, "hitl:grant:always")).status_code == 200
        await ephemeral(b, "You are not allowed")
        assert b.fake.views == {}  # the modal is not even opened
        assert (await b.stored(rid)).is_open and await b.daemon.service.list_grants() == []
        bob = b.person.as_user("U0BOB")
        assert (await bob.click(message, "hitl:grant:span:3600")).status_code == 200
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.responder.user_id == "U0BOB"
        assert [g.granted_by for g in await b.daemon.service.list_grants()] == ["slack:U0BOB"]
