"""`/pending`: what still waits for an answer in this chat, with a button per request that
shows it again at the bottom of the chat (a fresh copy with working buttons).

On a phone, a request posted yesterday is buried under the chat's history; this finds it.
Listed: the requests posted to this chat and, in a private chat, those whose `responders`
name this person (or a group of theirs): nobody learns of requests meant for others.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from telegram import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup

from adapters.telegram import keyboards as kb
from adapters.telegram.render import esc, when
from adapters.telegram.state import TokenRecord
from bridge.models import Request, Responder

if TYPE_CHECKING:
    from adapters.telegram.channel import TelegramChannel

LISTED = 20  # requests named (and buttons) in one /pending answer
RESHOW_EVERY_S = 30.0  # one fresh copy per request and chat in this time (a group's members may all press)


class PendingList:
    def __init__(self, channel: TelegramChannel) -> None:
        self.channel = channel
        self._shown: dict[tuple[str, int], float] = {}

    async def waiting_in(self, chat_id: int, user_id: int) -> list[Request]:
        """Open requests with a copy in this chat, and in a private chat also those that name
        this person (or a group of theirs) in `responders` and were posted to Telegram: the
        most urgent first."""
        me = Responder(platform="telegram", user_id=str(user_id))
        return await self.channel.bridge.waiting_for(me, channel=self.channel.name, here=[f"telegram:{chat_id}"],
                                                     named=chat_id == user_id)

    async def reply(self, chat_id: int, user_id: int) -> None:
        waiting = await self.waiting_in(chat_id, user_id)
        if not waiting:
            await self.channel.interactions.say(chat_id, "Nothing is waiting for an answer here.")
            return
        lines = [f"⏳ <b>{len(waiting)}</b> waiting for an answer here:"]
        buttons = []
        now = self.channel.now()
        for request in waiting[:LISTED]:
            due = f" (answer by {when(request.deadline)})" if request.deadline else ""
            lines.append(f"• {esc(kb.label(request.title))}{due}")
            token = kb.new_token()
            await self.channel.state.put_token(token, TokenRecord(request.id, "show", chat_id=chat_id), now)
            buttons.append([InlineKeyboardButton(f"↪️ {kb.label(request.title)}",
                                                 callback_data=kb.callback_data(token, kb.SHOW))])
        if len(waiting) > LISTED:
            lines.append(f"…and {len(waiting) - LISTED} more.")
        lines.append("Press one to show it again below.")
        await self.channel.send(chat_id, "\n".join(lines), InlineKeyboardMarkup(buttons))

    async def show(self, query: CallbackQuery, request: Request, chat_id: int) -> None:
        """Post a fresh copy of `request` in this chat (recorded, so it is updated like the others)."""
        key, clock = (request.id, chat_id), time.monotonic()
        if clock - self._shown.get(key, -RESHOW_EVERY_S) < RESHOW_EVERY_S:
            await self.channel.interactions.answer(query, "It was just shown below.")
            return
        if len(self._shown) > 4096:
            self._shown = {k: v for k, v in self._shown.items() if clock - v < RESHOW_EVERY_S}
        self._shown[key] = clock
        [result] = await self.channel.bridge.post(request, [f"telegram:{chat_id}"])
        await self.channel.interactions.answer(query, "Shown below." if result.ok else "Could not show it here.",
                                               alert=not result.ok)
