"""Sending to Telegram: every Bot API call the channel makes, behind one named error.

Calls go through the bot's rate limiter (`limits.FloodLimiter`: overall, per group, per
private chat, RetryAfter honoured) and `limits.with_retries` (network errors, with backoff).
What still fails comes out as `SendError`, which says whether Telegram refused the call
(`refused`), the person never pressed Start or blocked the bot (`blocked`) or the bot
token was refused (`token`, also reported as `channel:telegram` failing); a call that
succeeds makes the channel healthy again. A `SendError` never holds the token.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from telegram import CallbackQuery, InlineKeyboardMarkup, Message, ReplyParameters
from telegram.constants import ParseMode
from telegram.error import BadRequest, Forbidden, InvalidToken, TelegramError

from adapters.telegram.limits import with_retries

if TYPE_CHECKING:
    from telegram import ForceReply

    from adapters.telegram.health import TelegramHealth

log = logging.getLogger(__name__)
T = TypeVar("T")


class SendError(Exception):
    """A Bot API call that failed after its retries."""

    def __init__(self, what: str, error: TelegramError) -> None:
        self.what = what
        self.token = isinstance(error, InvalidToken)  # its text holds the token: never kept
        self.blocked = isinstance(error, Forbidden)
        self.refused = isinstance(error, BadRequest)
        self.message = "Unauthorized" if self.token else error.message
        super().__init__(f"Telegram {what}: {self.message}")


class TelegramSender:
    """The channel's outbox: send, edit, delete, answer button presses."""

    def __init__(self, bot: Any, retries: int, reporter: TelegramHealth) -> None:
        self.bot = bot
        self.retries = retries
        self.reporter = reporter

    async def call(self, what: str, make: Callable[[], Awaitable[T]]) -> T:
        """One Bot API call with retries; a refused token or a success updates the health."""
        try:
            result = await with_retries(make, attempts=self.retries, what=f"Telegram {what}")
        except InvalidToken as exc:
            self.reporter.refused(what)
            raise SendError(what, exc) from None
        except TelegramError as exc:
            raise SendError(what, exc) from exc
        self.reporter.succeeded()
        return result

    async def send(self, chat_id: int, text: str, markup: InlineKeyboardMarkup | ForceReply | None,
                   *, reply_to: int | None = None) -> Message:
        reply = ReplyParameters(reply_to, allow_sending_without_reply=True) if reply_to else None
        message: Message = await self.call("sendMessage", lambda: self.bot.send_message(
            chat_id, text, parse_mode=ParseMode.HTML, reply_markup=markup, reply_parameters=reply,
            disable_web_page_preview=True,
        ))
        return message

    async def say(self, chat_id: int, text: str) -> None:
        """A plain note in a chat, never failing the caller."""
        try:
            await self.send(chat_id, text, None)
        except SendError as exc:
            log.info("Telegram: could not send a note to %s: %s", chat_id, exc.message)

    async def edit_text(self, chat_id: int, message_id: int, text: str, markup: InlineKeyboardMarkup | None) -> None:
        try:
            await self.call("editMessageText", lambda: self.bot.edit_message_text(
                text, chat_id, message_id, parse_mode=ParseMode.HTML, reply_markup=markup,
                disable_web_page_preview=True,
            ))
        except SendError as exc:
            if not (exc.refused and "not modified" in exc.message):
                log.warning("Telegram: could not edit message %s in %s: %s", message_id, chat_id, exc.message)

    async def edit_markup(self, chat_id: int, message_id: int, markup: InlineKeyboardMarkup | None) -> None:
        try:
            await self.call("editMessageReplyMarkup", lambda: self.bot.edit_message_reply_markup(
                chat_id, message_id, reply_markup=markup))
        except SendError as exc:
            if "not modified" not in exc.message:
                log.debug("Telegram: could not edit buttons of %s in %s: %s", message_id, chat_id, exc.message)

    async def delete(self, chat_id: int, message_id: int) -> None:
        try:
            await self.call("deleteMessage", lambda: self.bot.delete_message(chat_id, message_id))
        except SendError as exc:
            log.warning("Telegram: could not delete a secret message in %s: %s", chat_id, exc.message)

    async def toast(self, query: CallbackQuery, text: str, *, alert: bool = False) -> None:
        """answerCallbackQuery, never failing the update (an old query cannot be answered)."""
        try:
            await self.call("answerCallbackQuery", lambda: query.answer(text[:200], show_alert=alert))
        except SendError as exc:
            log.info("Telegram: could not answer callback query: %s", exc.message)
