"""Sending behind one named error (`adapters/telegram/sender.py`), and the pure view of a
request in one chat (`adapters/telegram/view.py`). The bot is a stand-in for PTB's `Bot`
raising PTB's own errors; the health registry is the real one."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any, NoReturn

import pytest
from telegram import InlineKeyboardMarkup
from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError, TelegramError

from adapters.telegram.health import COMPONENT, TelegramHealth
from adapters.telegram.sender import SendError, TelegramSender
from adapters.telegram.view import layout, view
from bridge.health import Health, Status
from bridge.models import Request

TOKEN = "123456:AAE-secret-token-value"


class RefusingBot:
    """Every call fails with `error` (PTB's own exceptions, as the real Bot raises them)."""

    def __init__(self, error: TelegramError) -> None:
        self.error = error
        self.calls = 0

    def _fail(self, *args: Any, **kwargs: Any) -> NoReturn:
        self.calls += 1
        raise self.error

    async def send_message(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._fail()

    async def edit_message_text(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._fail()

    async def edit_message_reply_markup(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._fail()

    async def delete_message(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._fail()


def sender_for(error: TelegramError) -> tuple[TelegramSender, RefusingBot, Health]:
    health = Health()
    reporter = TelegramHealth("http://127.0.0.1:1")
    reporter.attach(health)
    bot = RefusingBot(error)
    return TelegramSender(bot, retries=0, reporter=reporter), bot, health


async def test_a_refused_token_never_reaches_the_error_and_fails_the_channel() -> None:
    sender, _, health = sender_for(InvalidToken(f"Not Found: bot{TOKEN} was refused"))
    with pytest.raises(SendError) as caught:
        await sender.send(42, "hello", None)
    error = caught.value
    assert (error.token, error.blocked, error.refused) == (True, False, False)
    assert TOKEN not in str(error) and TOKEN not in error.message and error.__cause__ is None
    assert error.__suppress_context__
    check = health.current(COMPONENT)
    assert check is not None and check.status is Status.failing and TOKEN not in check.summary


@pytest.mark.parametrize(("error", "named"), [
    (Forbidden("Forbidden: bot was blocked by the user"), "blocked"),
    (BadRequest("Chat not found"), "refused"),
    (NetworkError("connection reset"), ""),
])
async def test_every_failure_comes_out_as_one_named_error(error: TelegramError, named: str) -> None:
    sender, bot, health = sender_for(error)
    with pytest.raises(SendError) as caught:
        await sender.send(42, "hello", None)
    assert caught.value.what == "sendMessage" and caught.value.message == error.message
    assert caught.value.blocked is (named == "blocked") and caught.value.refused is (named == "refused")
    assert caught.value.__cause__ is error and bot.calls == 1  # retries=0: one attempt
    assert health.current(COMPONENT) is None  # only a refused token (or a success) reports


async def test_a_call_that_succeeds_makes_the_channel_healthy_again() -> None:
    sender, _, health = sender_for(InvalidToken("Unauthorized"))
    with pytest.raises(SendError):
        await sender.send(42, "hello", None)

    async def fine() -> bool:
        return True

    assert await sender.call("getMe", fine) is True
    check = health.current(COMPONENT)
    assert check is not None and check.status is Status.ok


async def test_notes_edits_and_deletes_never_fail_the_caller(caplog: pytest.LogCaptureFixture) -> None:
    sender, bot, _ = sender_for(BadRequest("Message to delete not found"))
    with caplog.at_level(logging.DEBUG, logger="adapters.telegram.sender"):
        await sender.say(42, "a note")
        await sender.edit_text(42, 7, "text", None)
        await sender.edit_markup(42, 7, None)
        await sender.delete(42, 7)
    assert bot.calls == 4
    assert "could not delete a secret message in 42" in caplog.text
    assert "could not edit message 7 in 42" in caplog.text


async def test_an_unchanged_message_is_not_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    sender, bot, _ = sender_for(BadRequest("Message is not modified: specified new message content..."))
    with caplog.at_level(logging.DEBUG, logger="adapters.telegram.sender"):
        await sender.edit_text(42, 7, "text", None)
    assert bot.calls == 1 and "could not edit" not in caplog.text


def request(*questions: dict[str, Any]) -> Request:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Request.model_validate({"id": "r_1", "title": "Deploy?", "questions": list(questions),
                                   "created_at": now, "updated_at": now})


def test_a_secret_asked_in_a_group_links_to_the_private_chat() -> None:
    secret = request({"id": "key", "kind": "secret", "prompt": "API key"})
    assert layout(secret, private=False) == "private" and layout(secret, private=True) == "reply"
    text, markup = view(secret, "private", "T" * 16, bot="hitl_bot")
    assert "press the button to answer in a private chat" in text
    assert isinstance(markup, InlineKeyboardMarkup)
    assert markup.inline_keyboard[0][0].url == "https://t.me/hitl_bot?start=" + "T" * 16
    text, markup = view(secret, "reply", "T" * 16, bot="hitl_bot", allowed=False)
    assert "Only the request's responders can answer it." in text and markup is None


def test_a_confirm_shows_buttons_with_its_token() -> None:
    confirm = request({"id": "ok", "kind": "confirm", "prompt": "Go?"})
    assert layout(confirm, private=True) == "buttons"
    _, markup = view(confirm, "buttons", "A" * 16, bot="hitl_bot")
    assert isinstance(markup, InlineKeyboardMarkup)
    assert all(b.callback_data.startswith("A" * 16) for row in markup.inline_keyboard for b in row)
