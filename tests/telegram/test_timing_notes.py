"""Timing notes on Telegram, end to end: a quorum-2 route's copies say how many approvals
there are so far and where the request escalated, edited in place (editMessageText on the
fake Bot API); the escalation's new copy says the same; once decided, only the outcome.
Time is moved by a manual clock and the scheduler is run by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.telegram_api import ApiCall, FakeTelegram
from tests.harness import ManualClock
from tests.telegram.helpers import closed, posted_message, request_of, submit, telegram_bridge

CONFIRM = {"title": "Deploy api v2.3", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Ship?"}]}
ANN, BOB, BOSS = 42, 43, 4242


def edit_of(message: dict[str, Any], contains: str) -> Any:
    """A predicate: an editMessageText of `message` whose text contains `contains`."""
    def match(call: ApiCall) -> bool:
        return (str(call.params.get("chat_id")) == str(message["chat"]["id"])
                and str(call.params.get("message_id")) == str(message["message_id"])
                and contains in str(call.params.get("text", "")))
    return match


async def test_votes_and_escalation_show_in_every_copy(tmp_path: Path, fake: FakeTelegram) -> None:
    clock = ManualClock()  # 12:00 UTC
    ann, bob = fake.person(ANN, "Ann"), fake.person(BOB, "Bob")
    fake.person(BOSS, "Maria")
    route: dict[str, Any] = {"quorum": 2, "escalate": [{"after": "15m", "notify": [f"telegram:{BOSS}"]}]}
    async with telegram_bridge(tmp_path, fake, clock=clock, notify=[f"telegram:{ANN}", f"telegram:{BOB}"],
                               responders=[f"telegram:{ANN}", f"telegram:{BOB}"], **route) as daemon:
        rid = await submit(daemon, CONFIRM)
        first = await posted_message(fake, ANN, "Deploy api")
        second = await posted_message(fake, BOB, "Deploy api")
        assert "approvals" not in first["text"] and "Escalated" not in first["text"]  # nothing to say yet

        await ann.press(first, "Approve")  # vote 1 of 2: the request stays open
        for copy in (first, second):
            await fake.wait_for_call("editMessageText", edit_of(copy, "1 of 2 approvals: Ann"))
        assert (await request_of(daemon, rid)).is_open
        assert [b["text"] for b in bob.buttons(second)] == ["✅ Approve", "❌ Reject"]  # still answerable

        clock.advance(minutes=15)  # level 1: the boss is told too
        assert await daemon.scheduler.run_due() >= 1
        await daemon.service.drain()
        escalated = f"Escalated to telegram:{BOSS} at 12:15 UTC"
        for copy in (first, second):
            call = await fake.wait_for_call("editMessageText", edit_of(copy, escalated))
            assert "1 of 2 approvals: Ann" in call.params["text"]  # the vote line stays
        boss_copy = await posted_message(fake, BOSS, "Deploy api")
        assert "1 of 2 approvals: Ann" in boss_copy["text"] and escalated in boss_copy["text"]

        await bob.press(second, "Approve")  # vote 2 of 2: decided
        await closed(daemon, rid)
        for copy in (first, second, boss_copy):
            call = await fake.wait_for_call("editMessageText", edit_of(copy, "Approved by"))
            assert "approvals" not in call.params["text"] and "Escalated" not in call.params["text"]
            assert not fake.message(copy["chat"]["id"], copy["message_id"]).get("reply_markup")
