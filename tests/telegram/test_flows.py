"""Every question kind end to end: engine → bridge → Telegram (fake) → simulated person → answer.

The real daemon and the real python-telegram-bot run against the fake Bot API; each flow
runs in polling and in webhook mode.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.fakes.telegram_api import FakeTelegram
from tests.harness import ManualClock, refuse_request_updates, wait_for
from tests.telegram.helpers import closed, confirm, last_text_to, posted_message, request_of, submit, telegram_bridge

MODES = ["polling", "webhook"]


@pytest.mark.parametrize("mode", MODES)
async def test_confirm_approve(tmp_path: Path, fake: FakeTelegram, mode: str) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake, mode=mode) as daemon:
        rid = await submit(daemon, {"title": "Deploy <web>", "context": {"sha": "abc&123"},
                                    "questions": [{"id": "ok", "kind": "confirm", "prompt": "Ship it?"}]})
        message = await posted_message(fake, 42, "Deploy <web>")
        assert [b["text"] for b in ann.buttons(message)] == ["✅ Approve", "❌ Reject"]
        assert all(len(b["callback_data"].encode()) <= 64 for b in ann.buttons(message))
        press = await ann.press(message, "Approve")
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.values == {"ok": "yes"}
        assert request.answer.responder.user_id == "42" and request.answer.via == "telegram"
        qid = press["callback_query"]["id"]
        await fake.wait_for(lambda: qid in fake.callback_answers)
        edited = await fake.wait_for(lambda: "Approved by Ann" in fake.message(42, message["message_id"])["text"]
                                     and fake.message(42, message["message_id"]))
        assert "reply_markup" not in edited  # buttons removed
        if mode == "webhook":
            assert fake.webhook_statuses == [200]


@pytest.mark.parametrize("mode", MODES)
async def test_confirm_reject_with_reason(tmp_path: Path, fake: FakeTelegram, mode: str) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake, mode=mode) as daemon:
        rid = await submit(daemon, confirm("Drop table"))
        message = await posted_message(fake, 42, "Drop table")
        await ann.press(message, "Reject")
        ask = await last_text_to(fake, 42, "why reject")
        assert ask.get("reply_markup") is None
        await ann.reply(ask, "not on a Friday")
        request = await closed(daemon, rid)
        assert request.answer is not None
        assert request.answer.values == {"answer": "no"} and request.answer.reason == "not on a Friday"
        await fake.wait_for(lambda: "Reason: not on a Friday" in fake.message(42, message["message_id"])["text"])


async def test_reject_twice_means_without_reason(tmp_path: Path, fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake) as daemon:
        rid = await submit(daemon, confirm("Rotate keys"))
        message = await posted_message(fake, 42, "Rotate keys")
        await ann.press(message, "Reject")
        await last_text_to(fake, 42, "why reject")
        await ann.press(message, "Reject")
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.values == {"answer": "no"}
        assert request.answer.reason is None


@pytest.mark.parametrize("mode", MODES)
async def test_reject_without_a_reason_in_time_is_recorded_without_one(
    tmp_path: Path, fake: FakeTelegram, mode: str
) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake, mode=mode, extra={"telegram": {"reason_wait": "200ms"}}) as daemon:
        rid = await submit(daemon, confirm("Rotate keys"))
        message = await posted_message(fake, 42, "Rotate keys")
        await ann.press(message, "Reject")
        ask = await last_text_to(fake, 42, "why reject")
        assert "With no reply within 200ms, it is rejected without one." in ask["text"]
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.values == {"answer": "no"}
        assert request.answer.reason is None and request.answer.responder.user_id == "42"
        assert request.answer.responder.name == "Ann"
        await last_text_to(fake, 42, "No reason came in time")
        await fake.wait_for(lambda: "Rejected by Ann" in fake.message(42, message["message_id"])["text"])
        await ann.reply(ask, "too late, sorry")  # the late reason changes nothing
        assert "Already answered" in (await last_text_to(fake, 42, "Already"))["text"]
        assert (await request_of(daemon, rid)).answer.reason is None  # type: ignore[union-attr]


async def test_overdue_reject_is_kept_while_the_store_refuses_it(
    tmp_path: Path, fake: FakeTelegram, caplog: pytest.LogCaptureFixture
) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake, extra={"telegram": {"reason_wait": "200ms"}}) as daemon:
        rid = await submit(daemon, confirm("Rotate keys"))
        message = await posted_message(fake, 42, "Rotate keys")
        [db] = list(tmp_path.rglob("bridge.db"))
        await asyncio.to_thread(refuse_request_updates, db, True)  # the database refuses the answer
        await ann.press(message, "Reject")
        await last_text_to(fake, 42, "why reject")
        await wait_for(lambda: "recording overdue rejections failed" in caplog.text)
        assert (await request_of(daemon, rid)).is_open
        await asyncio.to_thread(refuse_request_updates, db, False)  # it recovers: the Reject was kept
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.values == {"answer": "no"}


async def test_pending_reject_survives_a_restart(tmp_path: Path, fake: FakeTelegram) -> None:
    """The wait for a reason is in the store: a daemon started after it ran out records it."""
    ann = fake.person(42, "Ann")
    clock = ManualClock()
    async with telegram_bridge(tmp_path, fake, clock=clock) as daemon:  # reason_wait: 10m
        rid = await submit(daemon, confirm("Drop table"))
        message = await posted_message(fake, 42, "Drop table")
        await ann.press(message, "Reject")
        assert "within 10m" in (await last_text_to(fake, 42, "why reject"))["text"]
    clock.advance(minutes=11)
    async with telegram_bridge(tmp_path, fake, clock=clock, extra={"telegram": {"reason_wait": "200ms"}}) as daemon:
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.values == {"answer": "no"}
        assert request.answer.reason is None


async def test_reason_wait_null_waits_for_the_reply(tmp_path: Path, fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake, extra={"telegram": {"reason_wait": None}}) as daemon:
        rid = await submit(daemon, confirm("Drop table"))
        message = await posted_message(fake, 42, "Drop table")
        await ann.press(message, "Reject")
        ask = await last_text_to(fake, 42, "why reject")
        assert "within" not in ask["text"]
        await ann.reply(ask, "later")
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.reason == "later"


@pytest.mark.parametrize("mode", MODES)
async def test_choice(tmp_path: Path, fake: FakeTelegram, mode: str) -> None:
    ann = fake.person(42, "Ann")
    options = ["staging", "production-eu-west-1", "production-us-east-1", "canary"]
    async with telegram_bridge(tmp_path, fake, mode=mode) as daemon:
        rid = await submit(daemon, {"title": "Where?", "questions": [
            {"id": "env", "kind": "choice", "prompt": "Target", "options": options}]})
        message = await posted_message(fake, 42, "Where?")
        buttons = ann.buttons(message)
        assert [b["text"] for b in buttons] == options
        assert all(o not in b["callback_data"] for b in buttons for o in options)
        await ann.press(message, "production-us-east-1")
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.values == {"env": "production-us-east-1"}


@pytest.mark.parametrize("mode", MODES)
async def test_multi_choice(tmp_path: Path, fake: FakeTelegram, mode: str) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake, mode=mode) as daemon:
        rid = await submit(daemon, {"title": "Regions", "questions": [
            {"id": "r", "kind": "multi_choice", "prompt": "Which?", "options": ["eu", "us", "ap"]}]})
        message = await posted_message(fake, 42, "Regions")
        await ann.press(message, "☐ eu")
        await fake.wait_for(lambda: "☑ eu" in [b["text"] for b in ann.buttons(message)])
        await ann.press(message, "☐ ap")
        await fake.wait_for(lambda: "☑ ap" in [b["text"] for b in ann.buttons(message)])
        await ann.press(message, "☑ eu")  # toggled off again
        await fake.wait_for(lambda: "☐ eu" in [b["text"] for b in ann.buttons(message)])
        await ann.press(message, "Done")
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.values == {"r": ["ap"]}


@pytest.mark.parametrize("mode", MODES)
async def test_text_by_reply_and_by_plain_message(tmp_path: Path, fake: FakeTelegram, mode: str) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake, mode=mode) as daemon:
        first = await submit(daemon, {"title": "Name it", "questions": [{"kind": "text", "prompt": "Name?"}]})
        message = await posted_message(fake, 42, "Name it")
        assert fake.calls_of("sendMessage")[-1].params["reply_markup"]["force_reply"] is True
        await ann.reply(message, "blue <falcon>")
        request = await closed(daemon, first)
        assert request.answer is not None and request.answer.values == {"answer": "blue <falcon>"}
        await last_text_to(fake, 42, "Answer recorded")
        second = await submit(daemon, {"title": "Why", "questions": [{"kind": "text", "prompt": "Why?"}]})
        await posted_message(fake, 42, "Why")
        await ann.say("because")  # plain message: exactly one question is open in this chat
        request = await closed(daemon, second)
        assert request.answer is not None and request.answer.values == {"answer": "because"}


async def test_plain_message_with_two_open_questions_asks_to_reply(tmp_path: Path, fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake) as daemon:
        a = await submit(daemon, {"title": "First", "questions": [{"kind": "text", "prompt": "A?"}]})
        await submit(daemon, {"title": "Second", "questions": [{"kind": "text", "prompt": "B?"}]})
        first = await posted_message(fake, 42, "First")
        await posted_message(fake, 42, "Second")
        await ann.say("which one?")
        await last_text_to(fake, 42, "Several questions are open")
        assert (await daemon.store.get_request(a)).is_open  # type: ignore[union-attr]
        await ann.reply(first, "this one")
        request = await closed(daemon, a)
        assert request.answer is not None and request.answer.values == {"answer": "this one"}


@pytest.mark.parametrize("mode", MODES)
async def test_form_step_by_step_in_a_group(tmp_path: Path, fake: FakeTelegram, mode: str) -> None:
    fake.add_group(-1001, "ops")
    ann = fake.person(42, "Ann")
    body = {"title": "Incident", "questions": [
        {"id": "f", "kind": "form", "prompt": "Details", "fields": [
            {"name": "severity", "label": "Severity", "options": ["low", "high"]},
            {"name": "summary", "label": "Summary"},
            {"name": "ticket", "label": "Ticket", "required": False}]},
        {"id": "go", "kind": "confirm", "prompt": "Page the team?"}]}
    async with telegram_bridge(tmp_path, fake, mode=mode, notify=["telegram:-1001"]) as daemon:
        rid = await submit(daemon, body)
        message = await posted_message(fake, -1001, "Incident")
        await ann.press(message, "Answer")
        header = await last_text_to(fake, -1001, "is answering")
        assert "Cancel" in ann.buttons(header)[0]["text"]
        step1 = await last_text_to(fake, -1001, "1/4")
        await ann.press(step1, "high")
        step2 = await last_text_to(fake, -1001, "2/4")
        await ann.reply(step2, "db down")
        step3 = await last_text_to(fake, -1001, "3/4")
        await ann.reply(step3, "-")  # optional: skipped
        step4 = await last_text_to(fake, -1001, "4/4")
        await ann.press(step4, "Approve")
        request = await closed(daemon, rid)
        assert request.answer is not None
        assert request.answer.values == {"f": {"severity": "high", "summary": "db down"}, "go": "yes"}
        await fake.wait_for(lambda: "reply_markup" not in fake.message(-1001, header["message_id"]))


async def test_session_cancel_leaves_the_request_open(tmp_path: Path, fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    body = {"title": "Two things", "questions": [{"id": "a", "kind": "text", "prompt": "A?"},
                                                  {"id": "b", "kind": "text", "prompt": "B?"}]}
    async with telegram_bridge(tmp_path, fake) as daemon:
        rid = await submit(daemon, body)
        message = await posted_message(fake, 42, "Two things")
        await ann.press(message, "Answer")
        header = await last_text_to(fake, 42, "is answering")
        step1 = await last_text_to(fake, 42, "1/2")
        await ann.reply(step1, "first")
        await last_text_to(fake, 42, "2/2")
        await ann.press(header, "Cancel")
        await last_text_to(fake, 42, "Cancelled")
        request = await daemon.store.get_request(rid)
        assert request is not None and request.is_open
        await ann.say("late answer")  # the step prompt is gone: nothing open
        await last_text_to(fake, 42, "Nothing here is waiting")


async def test_many_options_are_answered_by_reply_and_bad_json_is_refused(tmp_path: Path, fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    options = [f"host-{i:03d}" for i in range(100)]  # more than fit as buttons
    async with telegram_bridge(tmp_path, fake) as daemon:
        rid = await submit(daemon, {"title": "Which host", "questions": [
            {"id": "h", "kind": "choice", "prompt": "Host?", "options": options}]})
        message = await posted_message(fake, 42, "Which host")
        assert "reply_markup" not in message  # ForceReply, no buttons
        await ann.reply(message, "host-057")
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.values == {"h": "host-057"}

        edit = await submit(daemon, {"title": "Edit args", "questions": [
            {"id": "args", "kind": "edit", "prompt": "Fix the call", "default": {"n": 1}}]})
        message = await posted_message(fake, 42, "Edit args")
        assert '"n": 1' in message["text"]
        await ann.reply(message, "{not json")
        await last_text_to(fake, 42, "Not recorded")
        await ann.reply(message, '{"n": 2}')
        request = await closed(daemon, edit)
        assert request.answer is not None and request.answer.values == {"args": {"n": 2}}
