"""The Telegram channel: posts requests, keeps every copy up to date, receives updates.

Updates arrive by long polling (default; the offset is committed only after an update was
processed, so a crash re-reads it) or by webhook at `/telegram/webhook` in the bridge's
own HTTP app (secret token compared in constant time). Either way each update goes
through the python-telegram-bot Application's handlers (see `handlers.py`), one at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from telegram import InlineKeyboardMarkup, Message, ReplyParameters, Update
from telegram.constants import ChatMemberStatus, ParseMode
from telegram.error import BadRequest, Forbidden, InvalidToken, TelegramError
from telegram.ext import Application, ApplicationBuilder

from adapters.telegram import keyboards as kb
from adapters.telegram.handlers import Interactions
from adapters.telegram.health import TelegramHealth
from adapters.telegram.limits import FloodLimiter, install_log_redaction, remove_log_redaction, with_retries
from adapters.telegram.render import closed_text, esc, request_text
from adapters.telegram.settings import TelegramSettings
from adapters.telegram.state import ChannelState, Prompt, TokenRecord
from bridge.http.body_limit import too_large
from bridge.models import Question, QuestionKind, Request, Responder
from bridge.ports import PostResult
from bridge.timing_view import timing_notes

if TYPE_CHECKING:
    from telegram import ForceReply

    from bridge.doctor import Finding
    from bridge.ports import BridgeAPI, Clock
    from bridge.store.base import Store

log = logging.getLogger(__name__)
T = TypeVar("T")
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
ALLOWED_UPDATES = ["message", "edited_message", "callback_query"]
COMMANDS = [("pending", "What waits for an answer in this chat"),
            ("cancel", "Stop answering a request step by step"),
            ("start", "Your Telegram id, for the bridge's routes")]
MAX_UPDATE_BYTES = 1_000_000
IN_GROUP = frozenset({ChatMemberStatus.OWNER, ChatMemberStatus.ADMINISTRATOR, ChatMemberStatus.MEMBER})
NOT_STARTED = ("undeliverable: Telegram user {id} has never pressed Start in the private chat with "
               "@{bot} (or blocked it); ask them to open https://t.me/{bot} and press Start")


def layout(request: Request, private: bool) -> str:
    """How a request is shown in one chat.

    `buttons` (one confirm/choice/multi_choice question) · `reply` (one text/edit/secret
    question, answered by replying) · `session` (several questions or a form: ▶️ Answer,
    then one step after another) · `private` (asks for a secret in a group: a deep link).
    """
    if request.secret_question_ids and not private:
        return "private"
    if len(request.questions) == 1:
        question = request.questions[0]
        if question.kind is QuestionKind.confirm:
            return "buttons"
        if question.kind in (QuestionKind.choice, QuestionKind.multi_choice):
            return "buttons" if kb.fits_as_buttons(question.options) else "reply"
        if question.kind in (QuestionKind.text, QuestionKind.edit, QuestionKind.secret):
            return "reply"
    return "session"


NOTES = {
    "reply": "↩️ Reply to this message with your answer.",
    "secret": "🔒 Reply to this message with the secret: it is deleted as soon as it is read.",
    "many": "↩️ Reply with the options (their exact text, separated by commas).",
    "private": "🔒 This request asks for a secret: press the button to answer in a private chat.",
    "not_allowed": "Only the request's responders can answer it.",
}


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
        self.interactions = Interactions(self)
        self.interactions.register(self.app)
        self._bridge: BridgeAPI | None = None
        self._poller: asyncio.Task[None] | None = None
        self._reasons: asyncio.Task[None] | None = None
        self._serial = asyncio.Lock()  # one update at a time, like polling, in webhook mode too
        self._failed: dict[int, BaseException] = {}
        self._chat_locks: dict[int, asyncio.Lock] = {}
        self._posted: dict[str, Request] = {}  # requests as posted: their questions never change
        self._members: dict[tuple[int, int], tuple[float, bool]] = {}  # (group, user) → (until, inside)
        self._update_locks: dict[str, asyncio.Lock] = {}
        self._redactor = install_log_redaction(settings.bot_token.get_secret_value())
        self.username = ""
        self.reporter = TelegramHealth(settings.api_url)  # channel:telegram, once started
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

        return await diagnose(self, targets, responders, store)

    def http_routes(self) -> Sequence[BaseRoute]:
        return [Route("/telegram/webhook", self._webhook, methods=["POST"])]

    async def is_member(self, entry: str, responder: Responder) -> bool:
        """Called by the core for `telegram:` responders entries: a group chat id (negative)
        lets everyone in that group answer, checked with getChatMember and cached for
        `member_cache_s` (a refusal for at most 30 s, so someone just added gets in soon)."""
        if responder.platform != "telegram":
            return False
        try:
            chat_id, user_id = int(entry.removeprefix("telegram:")), int(responder.user_id)
        except ValueError:
            return False
        if chat_id >= 0:
            return chat_id == user_id
        now = time.monotonic()
        cached = self._members.get((chat_id, user_id))
        if cached is not None and now < cached[0]:
            return cached[1]
        try:
            member = await self.call("getChatMember", lambda: self.bot.get_chat_member(chat_id, user_id))
            inside = member.status in IN_GROUP or (member.status == ChatMemberStatus.RESTRICTED
                                                   and bool(getattr(member, "is_member", False)))
        except BadRequest as exc:  # not in the group, or the bot is not (any more)
            log.info("Telegram: getChatMember(%s, %s): %s", chat_id, user_id, exc.message)
            inside = False
        ttl = self.settings.member_cache_s if inside else min(self.settings.member_cache_s, 30.0)
        if len(self._members) >= 10_000:
            self._members.clear()
        self._members[(chat_id, user_id)] = (now + ttl, inside)
        return inside

    def now(self) -> datetime:
        return self.clock.now()

    async def start(self, bridge: BridgeAPI) -> None:
        """Connect; when Telegram refuses the token or cannot be reached, report it
        (channel:telegram) and keep trying in the background: the daemon serves everyone else."""
        self._bridge = bridge
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
            await self._receive_updates()
        except InvalidToken:
            self.reporter.refused("getMe")
            return False
        except (BadRequest, Forbidden) as exc:  # e.g. setWebhook refusing webhook_url
            self.reporter.setup_refused(exc.message)
            return False
        except TelegramError as exc:  # after the retries: unreachable, or a 5xx that lasts
            self.reporter.unreachable(type(exc).__name__)
            return False
        self.connected = True
        self.reporter.connected(self.username)
        return True

    async def _receive_updates(self) -> None:
        if self.settings.mode == "webhook":
            secret = self.settings.webhook_secret.get_secret_value() if self.settings.webhook_secret else None
            await with_retries(lambda: self.bot.set_webhook(
                self.settings.webhook_url, secret_token=secret, allowed_updates=ALLOWED_UPDATES,
            ), attempts=self.settings.retries, what="setWebhook")
            log.info("Telegram: @%s receives updates by webhook", self.username)
        else:
            await with_retries(self.bot.delete_webhook, attempts=self.settings.retries, what="deleteWebhook")
            self._poller = asyncio.create_task(self._poll(), name="telegram-polling")
            log.info("Telegram: @%s receives updates by long polling", self.username)
        if self.settings.reason_wait is not None:
            every = min(30.0, max(0.05, self.settings.reason_wait.total_seconds() / 4))
            self._reasons = asyncio.create_task(self._sweep_reasons(every), name="telegram-reasons")

    async def _set_commands(self) -> None:
        """The bot's command menu (the / button in every chat). Cosmetic: never fails a start."""
        try:
            await self.call("setMyCommands", lambda: self.bot.set_my_commands(COMMANDS))
        except TelegramError as exc:
            log.warning("Telegram: could not set the command menu: %s", exc.message)

    async def stop(self) -> None:
        for task in (self._connector, self._poller, self._reasons):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._connector = self._poller = self._reasons = None
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

    def posted(self, request_id: str) -> Request | None:
        """The request as it was posted (questions, responders), if this process posted it."""
        return self._posted.get(request_id)

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
        purpose = {"buttons": "q", "reply": "q", "session": "start", "private": "private"}[mode]
        await self.state.put_token(token, TokenRecord(request.id, purpose, question.id, chat_id), self.now())
        text, markup = self.view(request, mode, token, allowed=allowed, notes=notes)
        try:
            async with self.chat_lock(chat_id):  # a reply must not overtake its prompt's registration
                message = await self.send(chat_id, text, markup)
                if mode == "reply" and allowed:
                    prompt = Prompt(request.id, question.id, "direct", secret=question.kind is QuestionKind.secret)
                    await self.state.put_prompt(chat_id, message.message_id, prompt, self.now())
        except Forbidden:  # the core logs every failed copy with its error
            return PostResult(target=target, ok=False, error=NOT_STARTED.format(id=chat_id, bot=self.username))
        except InvalidToken:
            return PostResult(target=target, ok=False, error="Telegram refused the bot token (Unauthorized)")
        except TelegramError as exc:
            return PostResult(target=target, ok=False, error=f"Telegram refused: {exc.message}")
        ref = {"chat_id": chat_id, "message_id": message.message_id, "token": token, "mode": mode}
        return PostResult(target=target, ref=ref)

    async def notes(self, request: Request) -> list[str]:
        """The timing notes (votes, escalations) an open request's copies show."""
        return await timing_notes(self.bridge, request) if request.is_open else []

    def view(self, request: Request, mode: str, token: str, *, allowed: bool = True,
             selected: set[int] | None = None, notes: Sequence[str] = (),
             ) -> tuple[str, InlineKeyboardMarkup | ForceReply | None]:
        """The text and keyboard of an open request in one chat; `notes` are its timing
        notes (see `notes()`), shown in every copy."""
        question = request.questions[0]
        if not allowed and question.kind is QuestionKind.secret:
            return request_text(request, NOTES["not_allowed"], notes), None
        if mode == "private":
            return request_text(request, NOTES["private"], notes), kb.private_keyboard(self.username, token)
        if mode == "session":
            return request_text(request, notes=notes), kb.start_keyboard(token)
        if mode == "reply":
            many = question.kind in (QuestionKind.choice, QuestionKind.multi_choice)
            note = NOTES["many" if many else "secret" if question.kind is QuestionKind.secret else "reply"]
            return request_text(request, note, notes), kb.force_reply(_placeholder(question), selective=False)
        return request_text(request, notes=notes), buttons_for(question, token, selected or set())

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
                text, markup = self.view(request, ref["mode"], ref["token"], selected=selected, notes=notes)
                if not isinstance(markup, InlineKeyboardMarkup):
                    markup = None
            else:
                text, markup = closed_text(request), None
                await self.state.drop_prompt(chat_id, message_id, now)
            await self.edit_text(chat_id, message_id, text, markup)
        if not request.is_open:
            self._posted.pop(request.id, None)
            for chat_id, message_id in await self.state.extras(request.id, now):
                await self.edit_markup(chat_id, message_id, None)

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        wanted = set(targets)
        for post in await self.bridge.store.list_posts(request.id, channel=self.name):
            if post.ok and post.target in wanted and "message_id" in post.ref:
                text = f"⏰ Still waiting for an answer: <b>{esc(request.title)}</b>"
                try:
                    await self.send(int(post.ref["chat_id"]), text, None, reply_to=int(post.ref["message_id"]))
                except TelegramError as exc:
                    log.warning("Telegram: reminder for %s to %s failed: %s", request.id, post.target, exc.message)

    def chat_lock(self, chat_id: int) -> asyncio.Lock:
        lock = self._chat_locks.get(chat_id)
        if lock is None:
            if len(self._chat_locks) > 4096:
                self._chat_locks = {k: v for k, v in self._chat_locks.items() if v.locked()}
            lock = self._chat_locks[chat_id] = asyncio.Lock()
        return lock

    # sending ---------------------------------------------------------------------------
    async def call(self, what: str, make: Callable[[], Awaitable[T]]) -> T:
        """One Bot API call with retries; a refused token or a success updates the health."""
        try:
            result = await with_retries(make, attempts=self.settings.retries, what=f"Telegram {what}")
        except InvalidToken:
            self.reporter.refused(what)
            raise
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

    async def edit_text(self, chat_id: int, message_id: int, text: str, markup: InlineKeyboardMarkup | None) -> None:
        try:
            await self.call("editMessageText", lambda: self.bot.edit_message_text(
                text, chat_id, message_id, parse_mode=ParseMode.HTML, reply_markup=markup,
                disable_web_page_preview=True,
            ))
        except BadRequest as exc:
            if "not modified" not in exc.message:
                log.warning("Telegram: could not edit message %s in %s: %s", message_id, chat_id, exc.message)
        except TelegramError as exc:
            log.warning("Telegram: could not edit message %s in %s: %s", message_id, chat_id, exc.message)

    async def edit_markup(self, chat_id: int, message_id: int, markup: InlineKeyboardMarkup | None) -> None:
        try:
            await self.call("editMessageReplyMarkup", lambda: self.bot.edit_message_reply_markup(
                chat_id, message_id, reply_markup=markup))
        except TelegramError as exc:
            if "not modified" not in exc.message:
                log.debug("Telegram: could not edit buttons of %s in %s: %s", message_id, chat_id, exc.message)

    # receiving ---------------------------------------------------------------------------
    async def process(self, update: Update) -> bool:
        """Handle one update; False when it failed inside the bridge (store down...)."""
        async with self._serial:
            self._failed.pop(update.update_id, None)
            await self.app.process_update(update)
            error = self._failed.pop(update.update_id, None)
        if error is not None:
            log.error("Telegram: update %s failed: %s", update.update_id, type(error).__name__)
            return False
        return True

    def failed(self, update: object, error: BaseException) -> None:
        if isinstance(update, Update):
            self._failed[update.update_id] = error

    async def _poll(self) -> None:
        """Long polling. Replicas sharing a store take turns: Telegram ends a `getUpdates`
        when another one starts, so only the replica holding the polling role polls, and a
        standby takes over within `failover_after` when it stops or dies."""
        role = f"telegram-polling:{self.bot.id}"
        every = self.settings.failover_after.total_seconds()
        store = self.bridge.store
        standing_by = False
        try:
            while True:
                if not await store.try_lead(role):
                    if not standing_by:
                        log.info("Telegram: another replica polls for @%s; this one stands by", self.username)
                        standing_by = True
                    await asyncio.sleep(every)
                    continue
                if standing_by:
                    log.info("Telegram: this replica takes over polling for @%s", self.username)
                    standing_by = False
                if not await self._poll_while_leading(role, every):
                    return
        finally:
            with contextlib.suppress(Exception):
                await store.resign(role)

    async def _poll_while_leading(self, role: str, every: float) -> bool:
        """Poll until the role is lost (→ True: stand by again) or polling must stop (→ False).
        The offset is committed (in the store, and to Telegram with the next getUpdates)
        only after the update was processed."""
        offset = await self.state.offset()  # a replica taking over goes on where the last stopped
        backoff = 0.2
        loop = asyncio.get_running_loop()
        checked = loop.time()
        while True:
            if loop.time() - checked >= every:
                if not await self.bridge.store.try_lead(role):
                    log.warning("Telegram: lost the polling role for @%s; standing by", self.username)
                    return True
                checked = loop.time()
            try:
                updates = await self.bot.get_updates(
                    offset=offset + 1 if offset else None, timeout=self.settings.poll_timeout,
                    allowed_updates=ALLOWED_UPDATES)
                backoff = 0.2
            except InvalidToken:  # revoked while running: report, keep trying (slowly)
                self.reporter.refused("getUpdates")
                await asyncio.sleep(backoff)
                backoff = min(max(backoff * 2, 5.0), 300.0)
                continue
            except TelegramError as exc:
                log.warning("Telegram: getUpdates failed (%s); retrying in %.1fs", exc.message, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            for update in updates:
                for attempt in range(3):
                    if await self.process(update):
                        break
                    await asyncio.sleep(0.2 * (attempt + 1))
                offset = update.update_id
                await self.state.commit(offset)

    async def _webhook(self, request: HttpRequest) -> Response:
        if self.settings.mode != "webhook" or self._bridge is None or self.settings.webhook_secret is None:
            return JSONResponse({"error": "Telegram webhook mode is not enabled"}, status_code=404)
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self.settings.webhook_secret.get_secret_value().encode()):
            log.warning("Telegram: refused a webhook call without the right secret token from %s",
                        request.client.host if request.client else "?")
            return JSONResponse({"error": "wrong or missing secret token"}, status_code=403)
        body = await request.body()
        if len(body) > MAX_UPDATE_BYTES:
            return too_large(MAX_UPDATE_BYTES, "none: Telegram's own limit on one update")
        try:
            data = json.loads(body)
            if not isinstance(data, dict) or not isinstance(data.get("update_id"), int):
                raise ValueError("no update_id")
            update = Update.de_json(data, self.bot)
        except Exception:
            log.warning("Telegram: refused a webhook body that is not a Telegram update")
            return JSONResponse({"error": "not a Telegram update"}, status_code=400)
        if not await self.process(update):
            return JSONResponse({"error": "not processed; Telegram will retry"}, status_code=500)
        return JSONResponse({"ok": True})


def buttons_for(question: Question, token: str, selected: set[int]) -> InlineKeyboardMarkup | None:
    if question.kind is QuestionKind.confirm:
        return kb.confirm_keyboard(token)
    if question.kind is QuestionKind.choice:
        return kb.choice_keyboard(token, question.options)
    if question.kind is QuestionKind.multi_choice:
        return kb.multi_keyboard(token, question.options, selected)
    return None


def _placeholder(question: Question) -> str:
    if question.kind is QuestionKind.secret:
        return "The secret (deleted after reading)"
    if question.kind is QuestionKind.edit:
        return "The edited JSON"
    return question.prompt
