"""Reminders and escalation as Slack shows them: a thread nudge, a DM to the next level,
and every copy (first post and escalation posts) kept up to date."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.slack_api import FakeSlack
from tests.harness import ManualClock, wait_for
from tests.slack.conftest import CHANNEL, confirm_body, slack_bridge


async def test_escalation_posts_a_dm_and_every_copy_is_updated(tmp_path: Path, fake: FakeSlack) -> None:
    clock = ManualClock()
    route = {"escalate": [{"after": "15m", "notify": ["slack:@U0BOB"]}], "timeout": "2h"}
    async with slack_bridge(tmp_path, fake, route=route, clock=clock) as b:
        rid = await b.create(confirm_body())
        first = await b.message_of(rid)
        clock.advance(minutes=16)
        await b.daemon.scheduler.run_due(clock.now())
        dm = await b.message_of(rid, "D0BOB")
        assert "hitl:approve" in json.dumps(dm["blocks"])
        await wait_for(lambda: "Escalated to slack:@U0BOB at 12:16 UTC" in json.dumps(
            fake.messages[(CHANNEL, first["ts"])]["blocks"]), 5)
        await b.person.as_user("U0BOB").click(dm, "hitl:approve")
        await b.closed(rid)
        for message in (first, dm):
            await wait_for(lambda m=message: "Approved by <@U0BOB>" in json.dumps(
                fake.messages[(m["channel"], m["ts"])]["blocks"]), 5)


async def test_reminder_is_a_thread_reply(tmp_path: Path, fake: FakeSlack) -> None:
    clock = ManualClock()
    async with slack_bridge(tmp_path, fake, route={"remind_every": "10m"}, clock=clock) as b:
        rid = await b.create(confirm_body())
        first = await b.message_of(rid)
        clock.advance(minutes=11)
        await b.daemon.scheduler.run_due(clock.now())
        reply = await wait_for(lambda: next((m for m in fake.messages.values()
                                             if m.get("thread_ts") == first["ts"]), None), 5)
        assert "Reminder" in reply["text"] and reply["channel"] == CHANNEL


async def test_expiry_updates_the_message(tmp_path: Path, fake: FakeSlack) -> None:
    clock = ManualClock()
    route = {"timeout": "2h", "on_timeout": {"answer": "no"}}
    async with slack_bridge(tmp_path, fake, route=route, clock=clock) as b:
        rid = await b.create(confirm_body())
        first = await b.message_of(rid)
        clock.advance(hours=3)
        await b.daemon.scheduler.run_due(clock.now())
        text = await wait_for(lambda: (t := json.dumps(fake.messages[(CHANNEL, first["ts"])]["blocks"]))
                              and "Expired" in t and t, 5)
        assert "hitl:approve" not in text and "ok=no" in text
        # a click on the expired message is told so, politely
        await b.person.click(first, "hitl:approve")
        note = await wait_for(lambda: next(iter(fake.ephemerals), None), 5)
        assert "expired at" in str(note["text"])
