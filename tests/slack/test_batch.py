"""Batches and `/hitl away` through the fake Slack: one DM message lists alike requests with
"Approve all N"; one left out; a four-eyes item refused on its own; a result per item."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bridge.models import RequestState
from tests.fakes.slack_api import FakeSlack
from tests.harness import wait_for
from tests.slack.conftest import SlackBridge, confirm_body, slack_bridge

PEOPLE = {"people": {"ana": ["slack:U0ALICE"], "bo": ["slack:U0BOB"]}}
ROUTE = {"responders": ["person:ana", "person:bo"], "forbid_self_approval": True}


async def slash(b: SlackBridge, text: str, user: str = "U0ALICE") -> str:
    """`/hitl TEXT` as Slack sends a slash command (form fields, signed); the reply's text."""
    body = urlencode({"command": "/hitl", "text": text, "user_id": user, "user_name": user.lower(),
                      "channel_id": "D0" + user[2:], "team_id": "T0FAKE", "trigger_id": b.fake.new_trigger_id(),
                      "response_url": "http://127.0.0.1:9/response", "api_app_id": "A0FAKE"}).encode()
    response = await b.person.send_raw(body)
    assert response.status_code == 200, response.text
    if response.headers.get("content-type", "").startswith("application/json"):
        return str(response.json().get("text", ""))
    return response.text  # Bolt answers an ack with text alone as plain text


def batch_message(fake: FakeSlack) -> dict[str, Any]:
    return next(m for m in fake.channel_messages("D0ALICE")
                if (m.get("metadata") or {}).get("event_type") == "hitl_batch")


def approve_all_but(b: SlackBridge, message: dict[str, Any], numbers: list[int],
                    user: str = "U0ALICE") -> dict[str, Any]:
    payload = b.person.as_user(user).block_actions(message, "batch:approve")
    options = next(bl for bl in message["blocks"] if bl.get("block_id") == "batch:exclude")["element"]["options"]
    picked = [o for o in options if int(o["value"]) in numbers]
    payload["state"] = {"values": {"batch:exclude": {"batch:exclude": {"type": "multi_static_select",
                                                                       "selected_options": picked}}}}
    return payload


async def test_twenty_alike_approved_with_one_click_but_one_and_four_eyes_alone(tmp_path: Path,
                                                                                 fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake, route=ROUTE, extra=PEOPLE) as b:
        ids = [await b.create(confirm_body(title=f"Delete 'f{n}.txt'", tool="fs.delete",
                                           requested_by="person:ana" if n == 7 else "person:bo"))
               for n in range(20)]
        for rid in ids:
            await b.message_of(rid)

        async def all_recorded() -> bool:  # the store has every copy (what a batch is read from)
            states = [(await b.stored(rid)).state for rid in ids]
            return all(state is RequestState.posted for state in states)
        await wait_for(all_recorded, 5)
        assert await slash(b, "batch") == "1 batch(es) sent to your DM."
        message = await wait_for(lambda: batch_message(fake), 5)
        assert "Approve all 20" in json.dumps(message["blocks"])

        mallory = b.person.as_user("U0MALLORY")  # the button's token is Alice's alone
        await mallory.send(approve_all_but(b, message, [], user="U0MALLORY"))
        told = await wait_for(lambda: fake.calls_of("chat.postEphemeral"), 5)
        assert "not yours" in json.dumps(told[-1].args)
        assert [(await b.stored(i)).is_open for i in ids[:3]] == [True, True, True]

        listed = next(b_ for b_ in message["blocks"] if b_.get("type") == "section")["text"]["text"]
        third = listed.splitlines()[2]
        assert (await b.person.send(approve_all_but(b, message, [3]))).status_code == 200
        key = (str(message["channel"]), str(message["ts"]))
        done = await wait_for(lambda: "Batch decided" in json.dumps(fake.messages[key]["blocks"])
                              and json.dumps(fake.messages[key]["blocks"]), 10)
        assert "18 answered" in done and "1 refused" in done and "1 skipped" in done
        assert "someone else must approve" in done  # the four-eyes item, refused on its own
        states = {}
        for rid in ids:
            states[rid] = (await b.stored(rid)).is_open
        assert sum(states.values()) == 2
        mine = ids[7]
        assert states[mine]  # Ana asked for it: still open for Bo
        skipped = next(r for r in ids if states[r] and r != mine)
        assert (await b.stored(skipped)).title in third.replace("\\", "")
        answered = next(r for r in ids if not states[r])
        event = next(e for e in await b.daemon.store.list_events(answered) if e.kind == "answered")
        assert event.data["batch"].startswith("b_") and event.data["via"] == "slack"


async def test_away_and_back_by_slash_command(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake, route=ROUTE, extra=PEOPLE) as b:
        until = (datetime.now(UTC) + timedelta(days=1)).isoformat()
        said = await slash(b, f"away <@U0BOB|bob> until {until}")
        assert "bo answers for you" in said
        assert "loop" in await slash(b, f"away <@U0ALICE> until {until}", user="U0BOB")
        assert "themselves" in await slash(b, f"away <@U0ALICE> until {until}")
        assert "no UTC offset" in await slash(b, "away bo until 2030-01-01T00:00")
        assert "not a person" in await slash(b, f"away <@U0NOBODY> until {until}")
        assert "away <person> until" in await slash(b, "away")
        assert "`/hitl batch`" in await slash(b, "dance")
        assert "not a handle of anyone" in await slash(b, "back", user="U0MALLORY")
        assert await slash(b, "back") == "Welcome back."
        assert await slash(b, "back") == "You were not away."

