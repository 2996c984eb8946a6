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
from adapters.telegram.state import TokenRecord
from adapters.telegram.texts import waiting_list
from bridge.models import Request, Responder

if TYPE_CHECKING:
    from adapters.telegram.desk import Desk

LISTED = 20  # requests named (and buttons) in one /pending answer
RESHOW_EVERY_S = 30.0  # one fresh copy per request and chat in this time (a group's members may all press)


class PendingList:
    def __init__(self, desk: Desk) -> None:
        self.desk = desk
        self._shown: dict[tuple[str, int], float] = {}

    async def waiting_in(self, chat_id: int, user_id: int) -> list[Request]:
        """Open requests with a copy in this chat, and in a private chat also those that name
        this person (or a group of theirs) in `responders` and were posted to Telegram: the
        most urgent first."""
        me = Responder(platform="telegram", user_id=str(user_id))
        return await self.desk.bridge.waiting_for(me, channel="telegram", here=[f"telegram:{chat_id}"],
                                                  named=chat_id == user_id)

    async def reply(self, chat_id: int, user_id: int) -> None:
        waiting = await self.waiting_in(chat_id, user_id)
        if not waiting:
            await self.desk.outbox.say(chat_id, "Nothing is waiting for an answer here.")
            return
        buttons = []
        now = self.desk.now()
        for request in waiting[:LISTED]:
            token = kb.new_token()
            await self.desk.state.put_token(token, TokenRecord(request.id, "show", chat_id=chat_id), now)
            buttons.append([InlineKeyboardButton(f"↪️ {kb.label(request.title)}",
                                                 callback_data=kb.callback_data(token, kb.SHOW))])
        await self.desk.outbox.send(chat_id, waiting_list(waiting, LISTED), InlineKeyboardMarkup(buttons))

    async def show(self, query: CallbackQuery, request: Request, chat_id: int) -> None:
        """Post a fresh copy of `request` in this chat (recorded, so it is updated like the others)."""
        key, clock = (request.id, chat_id), time.monotonic()
        if clock - self._shown.get(key, -RESHOW_EVERY_S) < RESHOW_EVERY_S:
            await self.desk.outbox.toast(query, "It was just shown below.")
            return
        if len(self._shown) > 4096:
            self._shown = {k: v for k, v in self._shown.items() if clock - v < RESHOW_EVERY_S}
        self._shown[key] = clock
        [result] = await self.desk.bridge.post(request, [f"telegram:{chat_id}"])
        await self.desk.outbox.toast(query, "Shown below." if result.ok else "Could not show it here.",
                                               alert=not result.ok)
