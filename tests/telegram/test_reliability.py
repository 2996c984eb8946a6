"""Reliability: crash between receiving and committing an update, 429/5xx from the Bot
API, flood limits, escalation and reminders editing copies in place."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from bridge.daemon import Daemon
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import callback_receiver, wait_for
from tests.telegram.helpers import closed, posted_message, submit, telegram_bridge

CONFIRM = {"title": "Deploy", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Ship?"}]}


async def test_crash_before_commit_rereads_the_update_and_records_once(tmp_path: Path, fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    async with callback_receiver() as receiver:
        body = {**CONFIRM, "callback": {"url": receiver.url, "secret": "s" * 20}}
        gate = fake.hold("answerCallbackQuery")  # the bot stops in the middle of handling the click
        try:
            async with telegram_bridge(tmp_path, fake) as first:
                rid = await submit(first, body)
                message = await posted_message(fake, 42, "Deploy")
                press = await ann.press(message, "Approve")
                await closed(first, rid)  # the answer is stored and delivered to the engine...
                await wait_for(lambda: receiver.received, 10)
                await fake.wait_for(lambda: any(c.method == "answerCallbackQuery" for c in fake.calls))
                assert fake.pending_updates  # ...but the update was never confirmed
            gate.set()
            # the daemon is gone mid-update; a new one starts on the same store
            async with telegram_bridge(tmp_path, fake) as second:
                query_id = press["callback_query"]["id"]
                answer = await fake.wait_for(lambda: fake.callback_answers.get(query_id))
                assert "Already answered by Ann" in answer["text"]
                await fake.wait_for(lambda: not fake.pending_updates)  # committed this time
                events = await second.store.list_events(rid)
                assert [e.kind for e in events].count("answered") == 1
                request = await second.store.get_request(rid)
                assert request is not None and request.answer is not None
                assert request.answer.responder.user_id == "42"
        finally:
            gate.set()
        assert len(receiver.received) == 1
        assert json.loads(receiver.received[0].body)["answer"]["values"] == {"ok": "yes"}


async def test_429_and_5xx_are_retried_without_duplicates(tmp_path: Path, fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    fake.fail("sendMessage", 429, retry_after=1)
    fake.fail("sendMessage", 502)
    fake.fail("getUpdates", 500, times=2)
    fake.fail("answerCallbackQuery", 503)
    async with telegram_bridge(tmp_path, fake) as daemon:
        rid = await submit(daemon, CONFIRM)
        message = await posted_message(fake, 42, "Deploy")
        press = await ann.press(message, "Approve")
        await closed(daemon, rid)
        query_id = press["callback_query"]["id"]
        await fake.wait_for(lambda: query_id in fake.callback_answers)
        statuses = [c.status for c in fake.calls if c.method == "sendMessage"]
        assert statuses[:3] == [429, 502, 200]
        assert len([m for m in fake.sent_to(42) if "Deploy" in m["text"]]) == 1  # posted exactly once
        posts = await daemon.store.list_posts(rid)
        assert [p.ok for p in posts] == [True]


async def test_one_message_per_second_per_private_chat(tmp_path: Path) -> None:
    fake = FakeTelegram(per_chat_interval=0.3, chat_jitter=0.02)
    await fake.start()
    try:
        fake.person(42, "Ann")
        async with telegram_bridge(tmp_path, fake) as daemon:
            for n in range(3):
                await submit(daemon, {**CONFIRM, "title": f"Deploy {n}"})
            for n in range(3):
                await posted_message(fake, 42, f"Deploy {n}")
        sends = [c.at for c in fake.calls_of("sendMessage")]
        assert len(sends) == 3
        gaps = [b - a for a, b in itertools.pairwise(sends)]
        assert all(gap >= 0.25 for gap in gaps), gaps
        assert fake.violations == []
    finally:
        await fake.stop()


async def test_escalation_and_reminder_update_the_copies(tmp_path: Path, fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake) as daemon:
        rid = await submit(daemon, CONFIRM)
        message = await posted_message(fake, 42, "Deploy")
        await escalate(daemon, rid)
        edited = await fake.wait_for(
            lambda: "Escalated to telegram:77 at " in fake.message(42, message["message_id"])["text"]
            and fake.message(42, message["message_id"]))
        assert [b["text"] for b in ann.buttons(edited)] == ["✅ Approve", "❌ Reject"]  # still answerable
        request = await daemon.store.get_request(rid)
        assert request is not None
        for channel in daemon.channels:
            await channel.remind(request, ["telegram:42"])
        reminder = await fake.wait_for(
            lambda: next((m for m in fake.sent_to(42) if "Still waiting" in m["text"]), None))
        assert reminder["reply_to_message_id"] == message["message_id"]
        await ann.press(edited, "Approve")
        await closed(daemon, rid)
        shown = await fake.wait_for(lambda: "Approved by Ann" in fake.message(42, message["message_id"])["text"]
                                    and fake.message(42, message["message_id"])["text"])
        assert "Escalated to" not in shown  # a closed request shows just the outcome


async def escalate(daemon: Daemon, request_id: str) -> None:
    """What the scheduler does at an escalation level: bump the level, record the
    `escalated` event (the copies' timing notes read it), update every copy."""
    now = daemon.service.clock.now()
    updated = await daemon.store.update_request(request_id, now=now, escalation_level=1)
    assert updated is not None
    await daemon.store.add_event(request_id, "escalated", "timer",
                                 {"level": 1, "notify": ["telegram:77"], "replace": False}, now)
    await daemon.service.update_channels(updated)
