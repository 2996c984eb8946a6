"""Calls to the Bot Connector, on the Teams SDK's `ApiClient`, behind one error.

The bot's token comes from the SDK's client-credentials client and is kept until shortly
before it expires. Every call is retried on 429 and 5xx (waiting what `Retry-After` says,
up to `max_retry_after_s`) and on network errors; a 401/403 is not retried: the
credential is refused, which the health reporter hears about.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
import warnings
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
from microsoft_teams.api import ApiClient
from microsoft_teams.api.activities.message.message import MessageActivityInput
from microsoft_teams.api.auth.credentials import ClientCredentials
from microsoft_teams.api.clients.bot.token_client import BotTokenClient
from microsoft_teams.api.clients.conversation.params import CreateConversationParams
from microsoft_teams.api.models import Account
from microsoft_teams.common import Client, ClientOptions

from adapters.teams.auth import cloud_of
from adapters.teams.pacing import Pacer
from adapters.teams.settings import TeamsSettings

log = logging.getLogger("hitl_bridge.teams")
T = TypeVar("T")
Observer = Callable[[str | None], None]


class TeamsCallFailed(Exception):
    """A Bot Connector (or token) call that did not succeed. `status`: the HTTP status (0:
    not reached); `refused`: the credential was refused."""

    def __init__(self, what: str, status: int, detail: str = "") -> None:
        where = f"HTTP {status}" if status else "not reached"
        super().__init__(f"{what}: {where}" + (f" ({detail})" if detail else ""))
        self.status = status
        self.detail = detail

    @property
    def refused(self) -> bool:
        return self.status in (401, 403)


def retry_after(response: httpx.Response, fallback: float) -> float:
    """Seconds `Retry-After` asks for (seconds or an HTTP date), else `fallback`."""
    raw = response.headers.get("Retry-After", "").strip()
    if not raw:
        return fallback
    if raw.isdigit():
        return float(raw)
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return fallback
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class Connector:
    """The bot's token and its calls to one or more service URLs."""

    def __init__(self, settings: TeamsSettings, observe: Observer) -> None:
        self.settings = settings
        self.observe = observe
        self.cloud = cloud_of(settings)
        self.http = Client(ClientOptions(timeout=settings.request_timeout_s, token=self._token))
        self._tokens = BotTokenClient(Client(ClientOptions(timeout=settings.request_timeout_s)), cloud=self.cloud)
        self._token_value: str | None = None
        self._token_until = 0.0
        self._token_lock = asyncio.Lock()
        self._clients: dict[str, ApiClient] = {}
        self.pacer = Pacer(settings.calls_per_s)
        self.calls = 0
        self.throttled = 0

    async def close(self) -> None:
        for client in (self.http, self._tokens.http):
            await client.http.aclose()

    async def token(self) -> str:
        """A bot token (asked for again a minute before it expires)."""
        async with self._token_lock:
            if self._token_value is not None and time.monotonic() < self._token_until:
                return self._token_value
            credentials = ClientCredentials(client_id=self.settings.app_id,
                                            client_secret=self.settings.app_password.get_secret_value(),
                                            tenant_id=self.settings.tenant_id or None)
            got = await self._call("token", lambda: self._tokens.get(credentials))
            self._token_value = got.access_token
            lifetime = float(got.expires_in) if got.expires_in and got.expires_in > 0 else 3600.0
            self._token_until = time.monotonic() + max(30.0, lifetime - 60)
            return self._token_value

    async def _token(self) -> str:
        return await self.token()

    def forget_token(self) -> None:
        self._token_value = None

    def client(self, service_url: str) -> ApiClient:
        if service_url not in self._clients:
            with warnings.catch_warnings():  # it builds its deprecated bot client too; we never call it
                warnings.simplefilter("ignore", DeprecationWarning)
                self._clients[service_url] = ApiClient(service_url, self.http, cloud=self.cloud)
        return self._clients[service_url]

    async def _call(self, what: str, call: Callable[[], Awaitable[T]],
                    where: tuple[str, str] | None = None) -> T:
        """`call`, retried; `where` (service URL, conversation id) paces it (pacing.py)."""
        backoff = self.settings.backoff_s
        for attempt in range(1, self.settings.max_attempts + 1):
            last = attempt == self.settings.max_attempts
            if where is not None:
                await self.pacer.turn(*where)
            self.calls += 1
            try:
                result = await call()
            except httpx.HTTPStatusError as exc:
                status = exc.response.status_code
                if status == 429 or status >= 500:
                    self.throttled += status == 429
                    wait = retry_after(exc.response, backoff)
                    if last or wait > self.settings.max_retry_after_s:
                        self.observe(f"HTTP {status}")
                        raise TeamsCallFailed(what, status, "gave up retrying") from None
                    log.info("teams: %s got HTTP %s, retrying in %.2fs", what, status, wait)
                    if where is not None and status == 429:
                        self.pacer.hold(where[0], wait)  # every call there waits it out
                    else:
                        await asyncio.sleep(wait)
                    backoff = min(backoff * 2, 30.0)
                    continue
                if status in (401, 403) and what != "token":
                    self.forget_token()
                failure = TeamsCallFailed(what, status, _detail(exc.response))
                self.observe("refused" if failure.refused else None)
                raise failure from None
            except (httpx.TransportError, OSError) as exc:
                if last:
                    self.observe("unreachable")
                    raise TeamsCallFailed(what, 0, type(exc).__name__) from None
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            self.observe(None)
            return result
        raise AssertionError("unreachable")  # the loop returns or raises

    # the calls the channel makes ---------------------------------------------------------------
    async def send(self, service_url: str, conversation_id: str, activity: dict[str, Any]) -> str:
        """Post `activity` in the conversation; the new activity's id."""
        message = MessageActivityInput.model_validate(activity)
        sent = await self._call(f"post to {conversation_id[:60]}", lambda: self.client(service_url)
                                .conversations.create_activity(conversation_id, message),
                                (service_url, conversation_id))
        return str(sent.id)

    async def update(self, service_url: str, conversation_id: str, activity_id: str,
                     activity: dict[str, Any]) -> None:
        message = MessageActivityInput.model_validate(activity)
        await self._call(f"update {activity_id[:60]}", lambda: self.client(service_url)
                         .conversations.update_activity(conversation_id, activity_id, message),
                         (service_url, conversation_id))

    async def reply(self, service_url: str, conversation_id: str, activity_id: str,
                    activity: dict[str, Any]) -> None:
        """A reply in the thread of `activity_id`."""
        message = MessageActivityInput.model_validate(activity)
        await self._call(f"reply to {activity_id[:60]}", lambda: self.client(service_url)
                         .conversations.reply_to_activity(conversation_id, activity_id, message),
                         (service_url, conversation_id))

    async def open_personal(self, service_url: str, tenant_id: str, aad_object_id: str) -> str:
        """Open (or find) the one-to-one chat with a person: its conversation id."""
        params = CreateConversationParams(members=[Account(id=aad_object_id)], tenant_id=tenant_id or None)
        made = await self._call(f"open a chat with {aad_object_id}",
                                lambda: self.client(service_url).conversations.create(params))
        return str(made.id)


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("code") or error.get("message") or "")[:200]
    return str(error or "")[:200]


async def members(connector: Connector, service_url: str, conversation_id: str) -> int:
    """How many members a conversation has (doctor: the bot may still see it)."""
    found = await connector._call(f"members of {conversation_id[:60]}", lambda: connector.client(service_url)
                                  .conversations.get_members(conversation_id))
    return len(found)
