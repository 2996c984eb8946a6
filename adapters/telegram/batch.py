"""Many decisions at once in Telegram, and saying you are away: `/batch` sends one message
per batch of alike requests waiting for you, with a button per item to leave it out
("all but 3 and 5"), "Approve all N" and "Review one by one"; after, the same message shows
each item's result. `/away bo until 2026-12-24T18:00+01:00` (or `for 3d`) and `/back` set
and end a delegation window. Grouping, the rules of each item and the windows are the
core's (bridge.batches, bridge.delegation); this module turns updates into those calls.

Its handlers run before the channel's own (group -1) and stop the update there."""

from __future__ import annotations

import logging
import re
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.ext import Application, ApplicationHandlerStop, CallbackQueryHandler, CommandHandler, filters

from adapters.telegram.render import esc
from adapters.telegram.sender import SendError
from bridge.away_words import AwayWordsError, parse_away
from bridge.errors import BridgeError
from bridge.models import Responder

if TYPE_CHECKING:
    from telegram.ext import ContextTypes

    from adapters.telegram.desk import Desk

log = logging.getLogger(__name__)
VIA = "telegram"
NAMESPACE = "telegram_batches"
KEEP = timedelta(days=1)
LISTED = 40  # items in one message (buttons: 8 rows of 5, then the two actions)
PER_ROW = 5
#: `hb:<token>:<all|one|n>`, well under Telegram's 64 bytes
CALLBACK = re.compile(r"^hb:([A-Za-z0-9_-]{16}):(all|one|[1-9][0-9]?)$")
GROUP = -1


def keyboard(token: str, count: int, left_out: set[int]) -> InlineKeyboardMarkup:
    """A toggle per item (✖ when left out), then the two actions."""
    numbers = [InlineKeyboardButton(f"✖ {n}" if n in left_out else str(n), callback_data=f"hb:{token}:{n}")
               for n in range(1, count + 1)]
    rows = [numbers[i:i + PER_ROW] for i in range(0, len(numbers), PER_ROW)]
    chosen = count - len(left_out)
    rows.append([InlineKeyboardButton(f"Approve all {chosen}", callback_data=f"hb:{token}:all"),
                 InlineKeyboardButton("Review one by one", callback_data=f"hb:{token}:one")])
    return InlineKeyboardMarkup(rows)


def listing(label: str, titles: list[str], left_out: set[int]) -> str:
    lines = [f"<b>{len(titles)} alike requests wait for you</b>: {esc(label[:200])}",
             "Press a number to leave that one out; each is approved on its own, its rules still apply.", ""]
    for n, title in enumerate(titles, start=1):
        line = f"{n}. {esc(title[:120])}"
        lines.append(f"<s>{line}</s> (left out)" if n in left_out else line)
    return "\n".join(lines)


def results(titles: list[str], ids: list[str], found: dict[str, dict[str, Any]]) -> str:
    marks = {"answered": "✅", "voted": "☑️", "refused": "⛔", "skipped": "➖"}
    lines = ["<b>Batch decided</b>"]
    for n, (request_id, title) in enumerate(zip(ids, titles, strict=False), start=1):
        item = found.get(request_id, {"outcome": "skipped"})
        why = f" — {esc(str(item['reason'])[:200])}" if item.get("reason") else ""
        lines.append(f"{marks.get(str(item['outcome']), '')} {n}. {esc(title[:100])} · {item['outcome']}{why}")
    return "\n".join(lines)


class BatchCommands:
    """`/batch`, `/away`, `/back` and the batch buttons."""

    def __init__(self, desk: Desk) -> None:
        self.desk = desk

    def register(self, app: Application[Any, Any, Any, Any, Any, Any]) -> None:
        message = filters.UpdateType.MESSAGE
        app.add_handler(CommandHandler("batch", self.on_batch, filters=message), group=GROUP)
        app.add_handler(CommandHandler("away", self.on_away, filters=message), group=GROUP)
        app.add_handler(CommandHandler("back", self.on_back, filters=message), group=GROUP)
        app.add_handler(CallbackQueryHandler(self.on_press, pattern=r"^hb:"), group=GROUP)

    @staticmethod
    def _who(update: Update) -> tuple[int, Responder] | None:
        message, user = update.effective_message, update.effective_user
        if message is None or user is None:
            return None
        return message.chat.id, Responder(platform="telegram", user_id=str(user.id), name=user.first_name or "")

    async def on_batch(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        found = self._who(update)
        if found is not None:
            chat_id, me = found
            await self.offer(chat_id, me)
        raise ApplicationHandlerStop

    async def offer(self, chat_id: int, me: Responder) -> None:
        bridge = self.desk.bridge
        batches = await bridge.batches_waiting(me, channel=VIA, here=[f"telegram:{chat_id}"])
        if not batches:
            await self.desk.outbox.say(chat_id, "No alike requests wait for you here.")
            return
        for batch in batches:
            token = secrets.token_urlsafe(12)[:16]
            titles = [r.title for r in batch.requests[:LISTED]]
            await bridge.store.kv_put(NAMESPACE, token, {
                "user": me.user_id, "chat": chat_id, "ids": batch.ids[:LISTED], "titles": titles,
                "label": batch.label, "out": []}, expires_at=self.desk.now() + KEEP)
            try:
                await self.desk.outbox.send(chat_id, listing(batch.label, titles, set()),
                                            keyboard(token, len(titles), set()))
            except SendError as exc:
                log.warning("Telegram: could not offer a batch in %s: %s", chat_id, exc.message)

    async def on_away(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        found = self._who(update)
        if found is not None:
            chat_id, me = found
            words = list(context.args or [])
            try:
                said = parse_away(words, self.desk.now())
                window = await self.desk.bridge.away(me.key, said.delegate.removeprefix("@"), said.until,
                                                     starts=said.starts, by=me.key)
                text = (f"You are away until {esc(window.until.isoformat())}: {esc(window.delegate)} answers "
                        "for you meanwhile (/back ends it).")
            except (BridgeError, AwayWordsError) as exc:
                text = f"Not done: {esc(str(exc))}"
            await self.desk.outbox.say(chat_id, text)
        raise ApplicationHandlerStop

    async def on_back(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        found = self._who(update)
        if found is not None:
            chat_id, me = found
            try:
                person = self.desk.bridge.person_acting(me)
                text = "Welcome back." if await self.desk.bridge.back(person) else "You were not away."
            except BridgeError as exc:
                text = f"Not done: {esc(str(exc))}"
            await self.desk.outbox.say(chat_id, text)
        raise ApplicationHandlerStop

    async def on_press(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        if query is None:
            raise ApplicationHandlerStop
        match = CALLBACK.match(query.data or "")
        key = match.group(1) if match else ""
        batch = await self.desk.bridge.store.kv_get(NAMESPACE, key, self.desk.now()) if match else None
        chat_id = query.message.chat.id if query.message else 0
        if match is None or batch is None or batch.get("user") != str(query.from_user.id) \
                or batch.get("chat") != chat_id:
            await self.desk.outbox.toast(query, "This button is not valid (any more), or not yours.", alert=True)
            raise ApplicationHandlerStop
        what = match.group(2)
        ids, titles = [str(i) for i in batch["ids"]], [str(t) for t in batch["titles"]]
        left_out = {int(n) for n in batch.get("out", [])}
        message_id = query.message.message_id if query.message else 0
        if what.isdigit():
            n = int(what)
            if n <= len(ids):
                left_out ^= {n}
                await self.desk.bridge.store.kv_put(NAMESPACE, key, {**batch, "out": sorted(left_out)},
                                                    expires_at=self.desk.now() + KEEP)
                await self.desk.outbox.edit_text(chat_id, message_id, listing(str(batch["label"]), titles, left_out),
                                                 keyboard(key, len(ids), left_out))
            await self.desk.outbox.toast(query, f"{len(ids) - len(left_out)} chosen")
            raise ApplicationHandlerStop
        await self.desk.outbox.toast(query, "On it…")
        me = Responder(platform="telegram", user_id=str(query.from_user.id), name=query.from_user.first_name or "")
        if what == "one":
            for request_id in ids:
                request = await self.desk.bridge.get(request_id)
                if request is not None and request.is_open and await self.desk.bridge.is_allowed(request, me, via=VIA):
                    await self.desk.bridge.post(request, [f"telegram:{chat_id}"])
            raise ApplicationHandlerStop
        if not await self.desk.bridge.store.kv_delete(NAMESPACE, key):
            raise ApplicationHandlerStop  # pressed twice at once: the other press decides
        chosen = [i for n, i in enumerate(ids, start=1) if n not in left_out]
        found: dict[str, dict[str, Any]] = {}
        if chosen:
            result = await self.desk.bridge.answer_batch(chosen, me, via=VIA, value="yes")
            found = {item.request_id: item.as_json() for item in result.items}
        await self.desk.outbox.edit_text(chat_id, message_id, results(titles, ids, found), None)
        raise ApplicationHandlerStop
