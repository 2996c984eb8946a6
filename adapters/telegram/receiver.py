"""Receiving updates, like python-telegram-bot's `Updater`: by long polling (default) or
by webhook at `/telegram/webhook` in the bridge's own HTTP app. Either way each update
goes through the Application's handlers (`handlers.py`) one at a time.

Polling commits the offset only after an update was processed, so a crash re-reads it;
replicas sharing a store take turns. The webhook compares the secret token in constant
time, refuses bodies that are too large or not an update, and answers 500 when an update
failed inside the bridge, so Telegram sends it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse, Response
from telegram import Update
from telegram.error import InvalidToken, TelegramError

from adapters.telegram.limits import with_retries
from bridge.http.body_limit import too_large

if TYPE_CHECKING:
    from starlette.requests import Request as HttpRequest
    from telegram.ext import Application, ContextTypes

    from adapters.telegram.health import TelegramHealth
    from adapters.telegram.settings import TelegramSettings
    from adapters.telegram.state import ChannelState
    from bridge.store.base import Store

log = logging.getLogger(__name__)
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
ALLOWED_UPDATES = ["message", "edited_message", "callback_query"]
MAX_UPDATE_BYTES = 1_000_000


class UpdateReceiver:
    """Feeds updates to `app` (its handlers registered, no PTB updater of its own)."""

    def __init__(self, app: Application[Any, Any, Any, Any, Any, Any], settings: TelegramSettings,
                 state: ChannelState, reporter: TelegramHealth) -> None:
        self.app = app
        self.settings = settings
        self.state = state
        self.reporter = reporter
        self.store: Store | None = None  # set when the channel starts; the webhook waits for it
        self.username = ""
        self._serial = asyncio.Lock()  # one update at a time, like polling, in webhook mode too
        self._failed: dict[int, BaseException] = {}
        self._poller: asyncio.Task[None] | None = None
        app.add_error_handler(self.on_error)

    @property
    def bot(self) -> Any:
        return self.app.bot

    def attach(self, store: Store) -> None:
        self.store = store

    async def start(self, username: str) -> None:
        """Tell Telegram where updates go (setWebhook, or deleteWebhook and poll)."""
        self.username = username
        if self.settings.mode == "webhook":
            secret = self.settings.webhook_secret.get_secret_value() if self.settings.webhook_secret else None
            await with_retries(lambda: self.bot.set_webhook(
                self.settings.webhook_url, secret_token=secret, allowed_updates=ALLOWED_UPDATES,
            ), attempts=self.settings.retries, what="setWebhook")
            log.info("Telegram: @%s receives updates by webhook", username)
        else:
            await with_retries(self.bot.delete_webhook, attempts=self.settings.retries, what="deleteWebhook")
            self._poller = asyncio.create_task(self._poll(), name="telegram-polling")
            log.info("Telegram: @%s receives updates by long polling", username)

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        self._poller = None

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

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """The Application's error handler: remember which update failed."""
        error = context.error or RuntimeError("unknown")
        log.error("Telegram: handling an update failed: %s", type(error).__name__,
                  exc_info=(type(error), error, error.__traceback__))
        if isinstance(update, Update):
            self._failed[update.update_id] = error

    # long polling -------------------------------------------------------------------------
    async def _poll(self) -> None:
        """Long polling. Replicas sharing a store take turns: Telegram ends a `getUpdates`
        when another one starts, so only the replica holding the polling role polls, and a
        standby takes over within `failover_after` when it stops or dies."""
        store = self.store
        assert store is not None
        role = f"telegram-polling:{self.bot.id}"
        every = self.settings.failover_after.total_seconds()
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
                if not await self._poll_while_leading(store, role, every):
                    return
        finally:
            with contextlib.suppress(Exception):
                await store.resign(role)

    async def _poll_while_leading(self, store: Store, role: str, every: float) -> bool:
        """Poll until the role is lost (→ True: stand by again) or polling must stop (→ False).
        The offset is committed (in the store, and to Telegram with the next getUpdates)
        only after the update was processed."""
        offset = await self.state.offset()  # a replica taking over goes on where the last stopped
        backoff = 0.2
        loop = asyncio.get_running_loop()
        checked = loop.time()
        while True:
            if loop.time() - checked >= every:
                if not await store.try_lead(role):
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

    # webhook ----------------------------------------------------------------------------
    async def webhook(self, request: HttpRequest) -> Response:
        """`POST /telegram/webhook`."""
        if self.settings.mode != "webhook" or self.store is None or self.settings.webhook_secret is None:
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
