"""What the HTTP engine sources share: for the polled ones (Mastra, agent-world) their config
keys, one HTTP client with the configured auth, the poll loop and the open requests they
know; for all, the wording of engine errors (Teal too)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr
from starlette.routing import BaseRoute

from bridge.config_daemon import Duration
from bridge.models import OPEN_STATES, Request
from bridge.ports import DeliveryError, RequestSink
from bridge.store.base import Store
from bridge.store.query import RequestQuery

NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,100}$"


class PolledEngineConfig(BaseModel):
    """Keys every polled engine source has (each subclass sets its own `name` default)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    base_url: str = Field(pattern=r"^https?://", max_length=2000)
    token: SecretStr | None = None  # sent as Authorization: Bearer <token>
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    poll_every: Duration = timedelta(seconds=5)
    timeout: Duration = timedelta(seconds=5)


class EngineUnreadable(Exception):
    """The engine answered, but not with what its protocol says (garbage, wrong shape)."""


class PolledEngineSource:
    """Skeleton of a Source that polls an engine; subclasses define `poll_once`,
    `scope_of` and `deliver`, and name the engine in `engine_label` (for error messages)."""

    engine_label = "the engine"

    def __init__(self, config: PolledEngineConfig, store: Store | None = None) -> None:
        self.name = config.name
        self.store = store
        self.poll_every = config.poll_every
        headers = {k: v.get_secret_value() for k, v in config.headers.items()}
        if config.token is not None:
            headers["Authorization"] = f"Bearer {config.token.get_secret_value()}"
        self.http = httpx.AsyncClient(
            base_url=config.base_url.rstrip("/"),
            headers=headers,
            timeout=config.timeout.total_seconds(),
            follow_redirects=False,
        )
        self.known: dict[str, set[str]] = {}  # scope → external ids of open requests seen there
        self.ambiguous: set[str] = set()  # request ids whose last write-back got no clear reply
        self.unusable: dict[str, str] = {}  # engine item → why it cannot be shown (logged once)
        self.polls = 0
        self.errors: dict[str, str] = {}  # scope → why its last listing failed (cleared on success)

    async def post_write_back(self, rid: str, path: str, body: dict[str, Any], was_unclear: bool,
                              params: dict[str, Any] | None = None) -> httpx.Response:
        """POST a write-back for request `rid`. A failure before anything was sent clears an
        `ambiguous` mark this attempt set (`was_unclear`: an earlier one had set it); any other
        failure leaves the mark, so the retry checks with the engine first."""
        try:
            return await self.http.post(path, params=params, json=body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # nothing was sent
            if not was_unclear:
                self.ambiguous.discard(rid)
            raise DeliveryError(f"{self.engine_label} unreachable: {describe(exc)}") from None
        except httpx.TimeoutException:
            raise DeliveryError(f"{self.engine_label} did not answer POST {path} in time") from None
        except httpx.HTTPError as exc:
            raise DeliveryError(f"{self.engine_label} broke off POST {path}: {describe(exc)}") from None

    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        return []

    @property
    def problems(self) -> dict[str, str]:
        """What this source cannot show right now: listings that failed, items refused."""
        found = dict(self.errors)
        found.update((item, f"cannot be shown: {why}") for item, why in self.unusable.items())
        return found

    async def close(self) -> None:
        await self.http.aclose()

    async def run(self, sink: RequestSink) -> None:
        await self._load_known()
        while True:
            await self.poll_once(sink)
            await asyncio.sleep(self.poll_every.total_seconds())

    async def poll_once(self, sink: RequestSink) -> None:
        raise NotImplementedError

    def scope_of(self, request: Request) -> str | None:
        """Where an open request of this source was found (a workflow, a chat…)."""
        raise NotImplementedError

    def remember(self, request: Request) -> None:
        """Keep what the source needs about an open request loaded at start (optional)."""

    async def _load_known(self) -> None:
        """Open requests from earlier runs, so withdrawals are noticed after a restart too."""
        if self.store is None:
            return
        async for batch in self.store.pages(RequestQuery(states=tuple(OPEN_STATES), source=self.name)):
            for request in batch:
                scope = self.scope_of(request)
                if scope is not None and request.external_id:
                    self.known.setdefault(scope, set()).add(request.external_id)
                    self.remember(request)


def error_text(reply: httpx.Response) -> str:
    """A short reason from an engine's error reply: its `error` field, or its text."""
    try:
        body = reply.json()
    except (ValueError, RecursionError):
        return reply.text[:200] or reply.reason_phrase
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return body["error"][:200]
    return str(body)[:200]


def describe(exc: BaseException) -> str:
    """Say what went wrong talking to an engine without echoing URLs with credentials or headers."""
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "connection refused or unreachable"
    return str(exc)[:300] or type(exc).__name__
