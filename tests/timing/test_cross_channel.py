"""A Slack request with quorum 2 escalates to a manager's Telegram: real slack_sdk and
python-telegram-bot clients against the fake APIs on 127.0.0.1, simulated people sending
signed Slack clicks and Telegram button presses; time moved by a manual clock."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import ManualClock, wait_for
from tests.slack.conftest import CHANNEL, SIGNING_SECRET, confirm_body, slack_section
from tests.slack.person import Person as SlackPerson
from tests.timing.helpers import bridge_on, events, step, stored

MANAGER = 4242


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as server:
        yield server


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    server = FakeTelegram(per_chat_interval=0.0)
    await server.start()
    yield server
    await server.stop()


def config(slack: FakeSlack, telegram: FakeTelegram) -> dict[str, Any]:
    return {
        "slack": slack_section(slack),
        "telegram": {"bot_token": telegram.token, "api_url": telegram.api_url, "mode": "polling",
                     "per_chat_interval": 0, "poll_timeout": 1, "retries": 2},
        "routes": [{"name": "deploys", "notify": ["slack:#deploys"], "quorum": 2,
                    "responders": ["slack:U0ALICE", "slack:U0BOB"], "remind_every": "10m",
                    "escalate": [{"after": "15m", "notify": [f"telegram:{MANAGER}"]}],
                    "timeout": "2h", "on_timeout": {"answer": "no"}}],
    }


async def test_slack_request_escalates_to_telegram_and_quorum_completes_there(
        tmp_path: Path, slack: FakeSlack, telegram: FakeTelegram) -> None:
    clock = ManualClock()
    manager = telegram.person(MANAGER, "Maria")
    async with bridge_on(tmp_path, clock, config(slack, telegram)) as daemon, \
            httpx.AsyncClient(timeout=10) as http:
        alice = SlackPerson(slack, http, f"{daemon.base_url}/slack/events", SIGNING_SECRET, "U0ALICE")
        async with httpx.AsyncClient(base_url=daemon.base_url) as api:
            created = await api.post("/v1/requests", json=confirm_body())
        assert created.status_code == 201, created.text
        rid = created.json()["id"]
        message = await wait_for(lambda: next((m for m in slack.channel_messages(CHANNEL)
                                               if m.get("metadata", {}).get("event_payload", {})
                                               .get("request_id") == rid), None), 5)

        await step(daemon, clock, minutes=10)  # reminder: a reply in the message's thread
        await wait_for(lambda: [m for m in slack.messages.values() if m.get("thread_ts") == message["ts"]], 5)

        clicked = await alice.click(message, "hitl:approve")  # vote 1 of 2
        assert clicked.status_code == 200
        await wait_for(lambda: daemon.store.list_votes(rid), 5)
        await daemon.service.drain()
        assert (await stored(daemon, rid)).is_open
        mallory = alice.as_user("U0MALLORY")
        await mallory.click(message, "hitl:approve")  # not a responder: refused, not counted
        await daemon.service.drain()
        refused = await wait_for(lambda: events(daemon, rid, "refused"), 5)
        assert refused[0].actor == "slack:U0MALLORY"
        assert [v.voter for v in await daemon.store.list_votes(rid)] == ["slack:U0ALICE"]

        updates_before = len(slack.calls_of("chat.update"))
        await step(daemon, clock, minutes=5)  # level 1: the manager's Telegram
        posted = await wait_for(lambda: next((m for m in telegram.sent_to(MANAGER)
                                              if "Deploy api" in m["text"]), None), 5)
        request = await stored(daemon, rid)
        assert request.escalation_level == 1
        assert f"telegram:{MANAGER}" in request.responders  # widened: the manager may vote
        await wait_for(lambda: len(slack.calls_of("chat.update")) > updates_before, 5)  # Slack copy updated
        assert "Escalated" in json.dumps(slack.messages[(CHANNEL, message["ts"])]["blocks"])

        await step(daemon, clock, minutes=5)  # 20m: reminders on both copies
        await wait_for(lambda: len([m for m in slack.messages.values()
                                    if m.get("thread_ts") == message["ts"]]) == 2, 5)
        await wait_for(lambda: any(c.params.get("reply_parameters") for c in telegram.calls_of("sendMessage")), 5)

        await manager.press(posted, "Approve")  # vote 2 of 2 from another channel

        async def closed() -> bool:
            return not (await stored(daemon, rid)).is_open

        await wait_for(closed, 5)
        request = await stored(daemon, rid)
        assert request.answer is not None and request.answer.values == {"ok": "yes"}
        assert request.answer.via == "telegram"
        assert [v.voter for v in await daemon.store.list_votes(rid)] == ["slack:U0ALICE", f"telegram:{MANAGER}"]
        assert await step(daemon, clock, hours=3) == 0  # no timeout answer after the decision


async def test_escalation_to_a_person_reaches_them_everywhere_they_are(
        tmp_path: Path, slack: FakeSlack, telegram: FakeTelegram) -> None:
    """`notify: [person:maria]` is a DM in Slack and a private chat in Telegram (her inbox
    login reaches nobody); either copy counts as Maria, once."""
    clock = ManualClock()
    manager = telegram.person(MANAGER, "Maria")
    slack.users["U0MARIA"] = "maria"
    people = {"people": {"maria": ["slack:U0MARIA", f"telegram:{MANAGER}", "web:maria"],
                         "alice": ["slack:U0ALICE"]}}
    base = config(slack, telegram)
    route = {**base["routes"][0], "responders": ["person:alice"], "quorum": 2,
             "escalate": [{"after": "15m", "notify": ["person:maria"]}]}
    async with bridge_on(tmp_path, clock, {**base, **people, "routes": [route]}) as daemon, \
            httpx.AsyncClient(timeout=10) as http:
        async with httpx.AsyncClient(base_url=daemon.base_url) as api:
            rid = (await api.post("/v1/requests", json=confirm_body())).json()["id"]
        await step(daemon, clock, minutes=15)
        posted = await wait_for(lambda: next((m for m in telegram.sent_to(MANAGER) if "Deploy api" in m["text"]),
                                             None), 5)
        copies = {p.target: p.ok for p in await daemon.store.list_posts(rid)}
        assert copies == {"slack:#deploys": True, "slack:@U0MARIA": True, f"telegram:{MANAGER}": True}
        request = await stored(daemon, rid)
        assert "person:maria" in request.responders and request.targets[-1] == "person:maria"
        dm = await wait_for(lambda: next((m for m in slack.messages.values()
                                          if m.get("channel", "").startswith("D")), None), 5)
        maria_in_slack = SlackPerson(slack, http, f"{daemon.base_url}/slack/events", SIGNING_SECRET, "U0MARIA")
        await maria_in_slack.click(dm, "hitl:approve")
        await wait_for(lambda: daemon.store.list_votes(rid), 5)
        await manager.press(posted, "Approve")  # Maria again, from Telegram: still one vote
        await wait_for(lambda: events(daemon, rid, "duplicate_vote"), 5)
        assert [v.voter for v in await daemon.store.list_votes(rid)] == ["person:maria"]
        assert (await stored(daemon, rid)).is_open
