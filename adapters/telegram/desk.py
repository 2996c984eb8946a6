"""What the update handlers (`handlers.py`, `sessions.py`, `pending.py`) may use of the
channel: a narrow interface, like python-telegram-bot's `CallbackContext`, instead of the
channel object. The channel provides it; tests can provide a small stand-in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio
    from datetime import datetime, timedelta

    from telegram import CallbackQuery, ForceReply, InlineKeyboardMarkup, Message

    from adapters.telegram.state import ChannelState
    from bridge.models import Request
    from bridge.ports import BridgeAPI


class Outbox(Protocol):
    """Sending (see `sender.TelegramSender`); failures raise `sender.SendError`."""

    async def send(self, chat_id: int, text: str, markup: InlineKeyboardMarkup | ForceReply | None,
                   *, reply_to: int | None = None) -> Message: ...

    async def say(self, chat_id: int, text: str) -> None: ...

    async def edit_markup(self, chat_id: int, message_id: int, markup: InlineKeyboardMarkup | None) -> None: ...

    async def edit_text(self, chat_id: int, message_id: int, text: str,
                        markup: InlineKeyboardMarkup | None) -> None: ...

    async def delete(self, chat_id: int, message_id: int) -> None: ...

    async def toast(self, query: CallbackQuery, text: str, *, alert: bool = False) -> None: ...


class Desk(Protocol):
    """The channel as its handlers see it."""

    @property
    def bridge(self) -> BridgeAPI: ...

    @property
    def state(self) -> ChannelState: ...

    @property
    def outbox(self) -> Outbox: ...

    @property
    def bot_id(self) -> int: ...

    @property
    def reason_wait(self) -> timedelta | None: ...

    def now(self) -> datetime: ...

    def posted(self, request_id: str) -> Request | None:
        """The request as this process posted it (questions never change), if it did."""
        ...

    def chat_lock(self, chat_id: int) -> asyncio.Lock:
        """Held while a request is posted to the chat: a reply must not overtake it."""
        ...
