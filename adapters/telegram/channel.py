"""The Telegram channel: posts requests and keeps every copy up to date.

The work is split like python-telegram-bot's `Updater` / `Bot` / handlers: updates come
in through `receiver.py` (long polling or webhook), go through the handlers
(`handlers.py`, which see the channel only as a `desk.Desk`), and every Bot API call goes
out through `sender.py`; what a request looks like is pure (`view.py`, `render.py`,
`keyboards.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute, Route
from telegram import InlineKeyboardMarkup
from telegram.error import BadRequest, Forbidden, InvalidToken, TelegramError
from telegram.ext import Application, ApplicationBuilder

from adapters.telegram import keyboards as kb
from adapters.telegram.batch import BatchCommands
from adapters.telegram.handlers import Interactions
from adapters.telegram.health import TelegramHealth
from adapters.telegram.limits import FloodLimiter, install_log_redaction, remove_log_redaction, with_retries
from adapters.telegram.members import Membership
from adapters.telegram.receiver import UpdateReceiver
from adapters.telegram.render import closed_text, esc
from adapters.telegram.sender import SendError, TelegramSender
from adapters.telegram.settings import TelegramSettings
from adapters.telegram.state import ChannelState, Prompt, TokenRecord
from adapters.telegram.view import PURPOSE, layout, view
from bridge.models import Request, Responder
from bridge.ports import PostResult
from bridge.questions import QuestionKind
from bridge.timing_view import timing_notes

if TYPE_CHECKING:
    from bridge.doctor import Finding
    from bridge.ports import BridgeAPI, Clock
    from bridge.store.base import Store

log = logging.getLogger(__name__)
COMMANDS = [("pending", "What waits for an answer in this chat"),
            ("cancel", "Stop answering a request step by step"),
            ("batch", "Alike requests waiting for you, to decide together"),
            ("away", "Away until a time: another person answers for you"),
            ("back", "Back: end your away window now"),
            ("start", "Your Telegram id, for the bridge's routes")]
NOT_STARTED = ("undeliverable: Telegram user {id} has never pressed Start in the private chat with "
               "@{bot} (or blocked it); ask them to open https://t.me/{bot} and press Start")


class TelegramChannel:
    """Channel port on python-telegram-bot (`telegram:<chat id>` targets)."""

    name = "telegram"
    prefixes = ("telegram:",)

    def __init__(self, settings: TelegramSettings, store: Store, clock: Clock) -> None:
        self.settings = settings
        self.clock = clock
        self.state = ChannelState(store)
        self.app: Application[Any, Any, Any, Any, Any, Any] = (
            ApplicationBuilder()
            .token(settings.bot_token.get_secret_value())
            .base_url(settings.api_url)
            .base_file_url(settings.file_url)
            .rate_limiter(FloodLimiter(settings.max_per_second, settings.per_chat_interval, settings.retries))
            .updater(None)
            .concurrent_updates(False)
            .connection_pool_size(64)
            .get_updates_read_timeout(settings.poll_timeout + 10.0)
            .build()
        )
        self.reporter = TelegramHealth(settings.api_url)  # channel:telegram, once started
        self.sender = TelegramSender(self.app.bot, settings.retries, self.reporter)
        self.members = Membership(self.sender, settings.member_cache_s)
        self.receiver = UpdateReceiver(self.app, settings, self.state, self.reporter)
        self.interactions = Interactions(self)
        self.interactions.register(self.app)
        BatchCommands(self).register(self.app)  # /batch, /away, /back (before the handlers above)
        self._bridge: BridgeAPI | None = None
        self._reasons: asyncio.Task[None] | None = None
        self._chat_locks: dict[int, asyncio.Lock] = {}
        self._posted: dict[str, Request] = {}  # requests as posted: their questions never change
        self._update_locks: dict[str, asyncio.Lock] = {}
        self._redactor = install_log_redaction(settings.bot_token.get_secret_value())
        self.username = ""
        self.connected = False
        self._connector: asyncio.Task[None] | None = None

    # the port --------------------------------------------------------------------------
    @property
    def bridge(self) -> BridgeAPI:
        if self._bridge is None:
            raise RuntimeError("the Telegram channel is not started")
        return self._bridge

    @property
    def bot(self) -> Any:
        return self.app.bot

    def owns(self, target: str) -> bool:
        return target.startswith("telegram:")

    async def doctor(self, targets: Sequence[str], responders: Sequence[str], store: Store) -> list[Finding]:
        """`hitl-bridge doctor`: the token and each target chat, asked of the Bot API now."""
        from adapters.telegram.doctor import diagnose

        return await diagnose(self.settings, targets, responders, store)

    def http_routes(self) -> Sequence[BaseRoute]:
        return [Route("/telegram/webhook", self.receiver.webhook, methods=["POST"])]

    async def is_member(self, entry: str, responder: Responder) -> bool:
        """Called by the core for `telegram:` responders entries (see `members.py`)."""
        return await self.members.admits(entry, responder)

    def now(self) -> datetime:
        return self.clock.now()

    # what the handlers see of the channel (desk.Desk) ------------------------------------
    @property
    def outbox(self) -> TelegramSender:
        return self.sender

    @property
    def bot_id(self) -> int:
        return int(self.bot.id)

    @property
    def reason_wait(self) -> timedelta | None:
        return self.settings.reason_wait

    def chat_lock(self, chat_id: int) -> asyncio.Lock:
        lock = self._chat_locks.get(chat_id)
        if lock is None:
            if len(self._chat_locks) > 4096:
                self._chat_locks = {k: v for k, v in self._chat_locks.items() if v.locked()}
            lock = self._chat_locks[chat_id] = asyncio.Lock()
        return lock

    def posted(self, request_id: str) -> Request | None:
        """The request as it was posted (questions, responders), if this process posted it."""
        return self._posted.get(request_id)

    # connecting ------------------------------------------------------------------------
    async def start(self, bridge: BridgeAPI) -> None:
        """Connect; when Telegram refuses the token or cannot be reached, report it
        (channel:telegram) and keep trying in the background: the daemon serves everyone else."""
        self._bridge = bridge
        self.receiver.attach(bridge.store)
        self.reporter.attach(bridge.health)
        if not await self._connect():
            self._connector = asyncio.create_task(self._keep_connecting(), name="telegram-connect")

    async def _keep_connecting(self) -> None:
        delay = self.settings.reconnect_after.total_seconds()
        while True:
            await asyncio.sleep(delay)
            if await self._connect():
                return
            delay = min(delay * 2, 300.0)

    async def _connect(self) -> bool:
        try:
            await with_retries(self.app.initialize, attempts=self.settings.retries, what="getMe")
            self.username = self.bot.username
            await self._set_commands()
            await self.receiver.start(self.username)
        except InvalidToken:
            self.reporter.refused("getMe")
            return False
        except (BadRequest, Forbidden) as exc:  # e.g. setWebhook refusing webhook_url
            self.reporter.setup_refused(exc.message)
            return False
        except TelegramError as exc:  # after the retries: unreachable, or a 5xx that lasts
            self.reporter.unreachable(type(exc).__name__)
            return False
        if self.settings.reason_wait is not None:
            every = min(30.0, max(0.05, self.settings.reason_wait.total_seconds() / 4))
            self._reasons = asyncio.create_task(self._sweep_reasons(every), name="telegram-reasons")
        self.connected = True
        self.reporter.connected(self.username)
        return True

    async def _set_commands(self) -> None:
        """The bot's command menu (the / button in every chat). Cosmetic: never fails a start."""
        try:
            await self.sender.call("setMyCommands", lambda: self.bot.set_my_commands(COMMANDS))
        except SendError as exc:
            log.warning("Telegram: could not set the command menu: %s", exc.message)

    async def stop(self) -> None:
        for task in (self._connector, self._reasons):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._connector = self._reasons = None
        await self.receiver.stop()
        try:
            await self.app.shutdown()
        except Exception:  # shutting down must not fail the daemon's stop
            log.exception("Telegram: shutdown failed")
        remove_log_redaction(self._redactor)

    async def _sweep_reasons(self, every: float) -> None:
        """Record the Rejects whose reason is overdue (`reason_wait`); survives restarts
        because the pending Rejects are in the store."""
        while True:
            await asyncio.sleep(every)
            try:
                await self.interactions.reject_unexplained()
            except Exception:
                log.exception("Telegram: recording overdue rejections failed")

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        if not self.connected:
            error = f"the Telegram channel is not connected: {self.reporter.summary}"
            return [PostResult(target=t, ok=False, error=error) for t in targets]
        results = []
        try:  # an escalation post shows the votes and levels so far, like the updated copies
            notes = await self.notes(request)
        except Exception:  # cosmetic: never a reason not to post
            log.exception("Telegram: reading the timing notes of %s failed", request.id)
            notes = []
        for target in targets:
            try:
                results.append(await self._post_one(request, target, notes))
            except Exception as exc:  # one bad target never fails the others
                log.exception("Telegram: posting %s to %s failed", request.id, target)
                results.append(PostResult(target=target, ok=False, error=f"{type(exc).__name__}: {exc}"))
        return results

    async def _post_one(self, request: Request, target: str, notes: Sequence[str] = ()) -> PostResult:
        if len(self._posted) >= 5000:
            self._posted.clear()
        self._posted[request.id] = request
        try:
            chat_id = int(target.removeprefix("telegram:"))
        except ValueError:
            return PostResult(target=target, ok=False, error="not a Telegram chat id (telegram:<number>)")
        private = chat_id > 0
        mode = layout(request, private)
        question = request.questions[0]
        allowed = not private or await self.bridge.is_allowed(
            request, Responder(platform="telegram", user_id=str(chat_id)), via="telegram")
        token = kb.new_token()
        await self.state.put_token(token, TokenRecord(request.id, PURPOSE[mode], question.id, chat_id), self.now())
        text, markup = view(request, mode, token, bot=self.username, allowed=allowed, notes=notes,
                            offers=self.bridge.grant_offers(request))
        try:
            async with self.chat_lock(chat_id):  # a reply must not overtake its prompt's registration
                message = await self.sender.send(chat_id, text, markup)
                if mode == "reply" and allowed:
                    prompt = Prompt(request.id, question.id, "direct", secret=question.kind is QuestionKind.secret)
                    await self.state.put_prompt(chat_id, message.message_id, prompt, self.now())
        except SendError as exc:  # the core logs every failed copy with its error
            if exc.blocked:
                error = NOT_STARTED.format(id=chat_id, bot=self.username)
            elif exc.token:
                error = "Telegram refused the bot token (Unauthorized)"
            else:
                error = f"Telegram refused: {exc.message}"
            return PostResult(target=target, ok=False, error=error)
        ref = {"chat_id": chat_id, "message_id": message.message_id, "token": token, "mode": mode}
        return PostResult(target=target, ref=ref)

    async def notes(self, request: Request) -> list[str]:
        """The timing notes (votes, escalations) an open request's copies show."""
        return await timing_notes(self.bridge, request) if request.is_open else []

    async def update(self, request: Request) -> None:
        """Re-render every copy from the stored request. Updates of one request run one at
        a time and read the store inside the lock, so a late vote or escalation update
        can never put the buttons back on an answered message."""
        lock = self._update_locks.get(request.id)
        if lock is None:
            if len(self._update_locks) > 4096:
                self._update_locks = {k: v for k, v in self._update_locks.items() if v.locked()}
            lock = self._update_locks[request.id] = asyncio.Lock()
        async with lock:
            request = await self.bridge.get(request.id) or request
            await self._update_copies(request)

    async def _update_copies(self, request: Request) -> None:
        now = self.now()
        notes = await self.notes(request)
        for post in await self.bridge.store.list_posts(request.id, channel=self.name):
            ref = post.ref
            if not post.ok or "message_id" not in ref:
                continue
            chat_id, message_id = int(ref["chat_id"]), int(ref["message_id"])
            if request.is_open:
                selected = await self.state.selection(chat_id, message_id, now)
                text, markup = view(request, ref["mode"], ref["token"], bot=self.username, selected=selected,
                                    notes=notes, offers=self.bridge.grant_offers(request))
                if not isinstance(markup, InlineKeyboardMarkup):
                    markup = None
            else:
                text, markup = closed_text(request), None
                await self.state.drop_prompt(chat_id, message_id, now)
            await self.sender.edit_text(chat_id, message_id, text, markup)
        if not request.is_open:
            self._posted.pop(request.id, None)
            for chat_id, message_id in await self.state.extras(request.id, now):
                await self.sender.edit_markup(chat_id, message_id, None)

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        wanted = set(targets)
        for post in await self.bridge.store.list_posts(request.id, channel=self.name):
            if post.ok and post.target in wanted and "message_id" in post.ref:
                text = f"⏰ Still waiting for an answer: <b>{esc(request.title)}</b>"
                try:
                    await self.sender.send(int(post.ref["chat_id"]), text, None,
                                           reply_to=int(post.ref["message_id"]))
                except SendError as exc:
                    log.warning("Telegram: reminder for %s to %s failed: %s", request.id, post.target, exc.message)
