"""The ntfy channel (`ntfy:<topic>` targets): one message per request and topic with
Approve and Reject buttons that POST to a one-use link on the bridge (adapters.taps), Open
for the answer page; a reminder replaces it and rings again, and the outcome replaces it
once the request is closed, wherever it was answered."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import httpx
from starlette.routing import BaseRoute

from adapters.ntfy.message import BadTarget, Target, closed_message, handle_of, parse_target, request_message
from adapters.ntfy.settings import NtfySettings
from adapters.send_counts import SendCounts
from adapters.taps import tap_route
from bridge.action_tokens import one_tap, token_for
from bridge.doctor import Finding, fail, ok, warn
from bridge.links import link_for
from bridge.models import Request
from bridge.ports import PostResult

if TYPE_CHECKING:
    from bridge.ports import BridgeAPI, Clock
    from bridge.store.base import Store

log = logging.getLogger("hitl_bridge.ntfy")
COMPONENT = "channel:ntfy"
TAP_PATH = "/ntfy/tap"
OPEN = "ntfy-open"  # request id -> {}: a question is showing; the first close replaces it, once
KEEP_OPEN = timedelta(days=2)
LOCAL_URLS = ("http://127.", "http://localhost", "http://[::1]")


class PublishFailed(Exception):
    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


class NtfyChannel:
    name = "ntfy"
    prefixes = ("ntfy:",)

    def __init__(self, settings: NtfySettings, store: Store, clock: Clock, public_url: str) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.public_url = public_url.rstrip("/")
        self.collector = SendCounts("ntfy", "ntfy messages published, by result")
        self._bridge: BridgeAPI | None = None
        self._http: httpx.AsyncClient | None = None

    def owns(self, target: str) -> bool:
        return target.startswith("ntfy:")

    @property
    def bridge(self) -> BridgeAPI:
        if self._bridge is None:
            raise RuntimeError("the ntfy channel is not started")
        return self._bridge

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            token = self.settings.token.get_secret_value() if self.settings.token else None
            self._http = httpx.AsyncClient(timeout=self.settings.timeout_s,
                                           headers={"Authorization": f"Bearer {token}"} if token else {})
        return self._http

    async def start(self, bridge: BridgeAPI) -> None:
        self._bridge = bridge
        if self.public_url.startswith(LOCAL_URLS):
            log.warning("ntfy: the buttons POST to %s, which only this machine can reach; set http.public_url "
                        "to the address phones reach the bridge at", self.public_url)
        bridge.health.ok(COMPONENT, "ready")

    async def stop(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    def http_routes(self) -> Sequence[BaseRoute]:
        return [tap_route(TAP_PATH, "ntfy", lambda: self.bridge, self.clock)]

    # sending ------------------------------------------------------------------------------
    async def _publish(self, message: dict[str, Any]) -> dict[str, Any]:
        """Publish one JSON message; a 5xx, a 429 or no answer is tried once more."""
        for attempt in (1, 2):
            try:
                response = await self._client().post(self.settings.url + "/", json=message)
            except httpx.HTTPError as exc:
                failure = PublishFailed(f"{self.settings.url} did not answer: {type(exc).__name__}", permanent=False)
            else:
                if response.is_success:
                    body = response.json() if response.headers.get("content-type", "").startswith(
                        "application/json") else {}
                    return body if isinstance(body, dict) else {}
                permanent = response.status_code < 500 and response.status_code != 429
                failure = PublishFailed(f"the server answered {response.status_code}: {response.text[:200]}",
                                        permanent=permanent)
                if permanent:
                    break
            if attempt == 1:
                await asyncio.sleep(0.5)
        self.collector.add("failed")
        if not failure.permanent:
            self.bridge.health.degraded(COMPONENT, str(failure), fix="check ntfy.url and that the server answers")
        elif "401" in str(failure) or "403" in str(failure):
            self.bridge.health.failing(COMPONENT, str(failure), fix="check ntfy.token and the topic's access")
        raise failure

    async def _message(self, request: Request, target: Target, handle: str, reminder: bool) -> dict[str, Any]:
        link = await link_for(self.store, request.id, handle, deadline=request.deadline)
        open_url = f"{self.public_url}/inbox/a/{link.token}"
        if not request.is_open:
            return closed_message(request, target, open_url=open_url)
        tap = None
        if one_tap(request):
            token = await token_for(self.store, request.id, handle, deadline=request.deadline)
            tap = f"{self.public_url}{TAP_PATH}/{token.token}"
        return request_message(request, target, tap_url=tap, open_url=open_url, priority=self.settings.priority,
                               tags=self.settings.tags, reminder=reminder)

    async def _send(self, request: Request, target: str, reminder: bool = False) -> PostResult:
        try:
            parsed = parse_target(target)
        except BadTarget as exc:
            return PostResult(target=target, ok=False, error=f"{exc} (permanent)")
        try:
            sent = await self._publish(await self._message(request, parsed, handle_of(target), reminder))
        except PublishFailed as failure:
            log.error("ntfy: publishing request %s to %s failed: %s", request.id, parsed.topic, failure)
            return PostResult(target=target, ok=False, error=str(failure))
        self.collector.add("sent")
        self.bridge.health.ok(COMPONENT, "publishing")
        if request.is_open:
            await self.store.kv_put(OPEN, request.id, {},
                                    request.deadline + KEEP_OPEN if request.deadline else None)
        return PostResult(target=target, ref={"id": str(sent.get("id", "")), "topic": parsed.topic})

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        return list(await asyncio.gather(*(self._send(request, t) for t in targets)))

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        results = await asyncio.gather(*(self._send(request, t, reminder=True) for t in targets))
        failed = {r.target: r.error for r in results if not r.ok}
        if failed:
            await self.bridge.note(request.id, "remind_failed", self.name, {"targets": failed})

    async def update(self, request: Request) -> None:
        """Open: nothing. Closed: the outcome replaces the message on every topic, once."""
        if request.is_open or not await self.store.kv_delete(OPEN, request.id):
            return
        posts = await self.store.list_posts(request.id, channel=self.name)
        for target in dict.fromkeys(p.target for p in posts if p.ok):
            result = await self._send(request, target)
            if not result.ok:
                await self.bridge.note(request.id, "update_failed", self.name, {target: result.error})

    # operations ---------------------------------------------------------------------------
    async def doctor(self, targets: Sequence[str] = (), responders: Sequence[str] = (),
                     store: object = None) -> list[Finding]:
        """The server's health endpoint, each target's spelling, and a reachable public URL."""
        findings: list[Finding] = []
        try:
            response = await self._client().get(self.settings.url + "/v1/health")
            healthy = response.is_success and response.json().get("healthy") is True
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            findings.append(fail("ntfy", f"{self.settings.url}: {type(exc).__name__}",
                                 "check ntfy.url and that the server is reachable"))
        else:
            findings.append(ok("ntfy", f"{self.settings.url}: healthy") if healthy else
                            fail("ntfy", f"{self.settings.url}/v1/health answered {response.status_code}",
                                 "check ntfy.url"))
        finally:
            await self.stop()
            self._http = None
        for target in targets:
            try:
                parse_target(target)
            except BadTarget as exc:
                findings.append(fail(f"ntfy {target}", str(exc), "use ntfy:<topic> or ntfy:<topic>?priority=5"))
        if self.public_url.startswith(LOCAL_URLS):
            findings.append(warn("ntfy buttons", f"Approve and Reject POST to {self.public_url}, which only this "
                                 "machine can reach", "set http.public_url"))
        return findings
