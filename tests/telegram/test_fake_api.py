"""The fake Bot API behaves like Telegram for the real python-telegram-bot client."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError, RetryAfter

from tests.fakes.telegram_api import FakeTelegram


def bot_for(fake: FakeTelegram, token: str | None = None) -> Bot:
    return Bot(token or fake.token, base_url=fake.api_url)


async def test_get_me_and_send(fake: FakeTelegram) -> None:
    fake.person(42)
    async with bot_for(fake) as bot:
        assert bot.username == fake.bot_username
        message = await bot.send_message(42, "<b>hi</b> &amp; bye", parse_mode="HTML")
    assert message.chat.id == 42
    assert fake.calls_of("sendMessage")[0].params["parse_mode"] == "HTML"


async def test_wrong_token_is_refused(fake: FakeTelegram) -> None:
    with pytest.raises(InvalidToken):
        async with bot_for(fake, "999:nope"):
            pass


async def test_limits_are_checked(fake: FakeTelegram) -> None:
    fake.person(42)
    async with bot_for(fake) as bot:
        with pytest.raises(BadRequest, match="too long"):
            await bot.send_message(42, "x" * 4097)
        with pytest.raises(BadRequest, match=r"(?i)button_data_invalid"):
            markup = InlineKeyboardMarkup([[InlineKeyboardButton("b", callback_data="x" * 65)]])
            await bot.send_message(42, "pick", reply_markup=markup)
        with pytest.raises(BadRequest, match="parse entities"):
            await bot.send_message(42, "a <tag> b", parse_mode="HTML")
        with pytest.raises(Forbidden, match="initiate conversation"):
            await bot.send_message(77, "never pressed Start")
        with pytest.raises(BadRequest, match=r"(?i)chat not found"):
            await bot.send_message(-100, "unknown group")
        await bot.send_message(42, "é" * 4096)  # the limit is inclusive


async def test_injected_429_and_5xx(fake: FakeTelegram) -> None:
    fake.person(42)
    fake.fail("sendMessage", 429, retry_after=3)
    fake.fail("sendMessage", 502)
    async with bot_for(fake) as bot:
        with pytest.raises(RetryAfter) as info:
            await bot.send_message(42, "a")
        assert info.value.retry_after in (3, __import__("datetime").timedelta(seconds=3))
        with pytest.raises(NetworkError):
            await bot.send_message(42, "b")
        await bot.send_message(42, "c")
    assert [c.status for c in fake.calls if c.method == "sendMessage"] == [429, 502, 200]


async def test_get_updates_long_poll_and_offsets(fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    async with bot_for(fake) as bot:
        waiting = asyncio.create_task(bot.get_updates(timeout=5))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await ann.say("hello")
        first = await asyncio.wait_for(waiting, 5)
        assert [u.message.text for u in first] == ["hello"]  # type: ignore[union-attr]
        again = await bot.get_updates(timeout=0)
        assert [u.update_id for u in again] == [first[0].update_id]  # not confirmed yet
        assert await bot.get_updates(offset=first[0].update_id + 1, timeout=0) == ()
        assert fake.pending_updates == []


async def test_callback_answers_are_checked(fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    async with bot_for(fake) as bot:
        markup = InlineKeyboardMarkup([[InlineKeyboardButton("Go", callback_data="tok|y")]])
        sent = await bot.send_message(42, "pick", reply_markup=markup)
        update = await ann.press(sent.to_dict(), "Go")
        query_id = update["callback_query"]["id"]
        assert update["callback_query"]["data"] == "tok|y"
        with pytest.raises(BadRequest, match=r"(?i)message_too_long"):
            await bot.answer_callback_query(query_id, "x" * 201)
        await bot.answer_callback_query(query_id, "ok")
        with pytest.raises(BadRequest, match=r"(?i)query id is invalid"):
            await bot.answer_callback_query(query_id, "twice")
        with pytest.raises(BadRequest, match="not modified"):
            await bot.edit_message_text("pick", 42, sent.message_id, reply_markup=markup)
        await bot.edit_message_text("done", 42, sent.message_id)
    assert "reply_markup" not in fake.message(42, sent.message_id)


async def test_person_messages_can_be_deleted_in_private_chats(fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    update = await ann.say("s3cret")
    key = (42, update["message"]["message_id"])
    async with bot_for(fake) as bot:
        assert await bot.delete_message(*key)
        with pytest.raises(BadRequest):
            await bot.delete_message(*key)
    assert key in fake.deleted


async def test_webhook_delivery_carries_the_secret(fake: FakeTelegram) -> None:
    received: list[tuple[str | None, dict[str, object]]] = []

    async def hook(request: web.Request) -> web.Response:
        received.append((request.headers.get("X-Telegram-Bot-Api-Secret-Token"), await request.json()))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/telegram/webhook", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with bot_for(fake) as bot:
            await bot.set_webhook(f"http://127.0.0.1:{port}/telegram/webhook", secret_token="s_3-cr3t")
            with pytest.raises(Exception, match="webhook is active"):
                await bot.get_updates(timeout=0)
            await fake.person(42).say("via webhook")
        assert received[0][0] == "s_3-cr3t"
        assert received[0][1]["message"]["text"] == "via webhook"  # type: ignore[index]
        assert fake.webhook_statuses == [200]
    finally:
        await runner.cleanup()


async def test_flood_limits_are_detected_and_enforced() -> None:
    fake = FakeTelegram(per_chat_interval=1.0, overall_per_second=3)
    await fake.start()
    try:
        for user in (1, 2, 3, 4):
            fake.person(user)
        async with bot_for(fake) as bot:
            await bot.send_message(1, "a")
            await bot.send_message(1, "b")  # same private chat within a second
            assert fake.violations and "chat 1" in fake.violations[0]
            fake.violations.clear()
            fake.enforce_limits = True
            await bot.send_message(2, "c")
            with pytest.raises(RetryAfter):
                await bot.send_message(3, "d")  # fourth call with a chat_id in one second
        assert any("more than 3" in v for v in fake.violations)
    finally:
        await fake.stop()
