"""The Web Push channel (`push:<inbox login>` targets): each device the person turned
notifications on for gets the request as a notification with Approve and Reject (Open for
other kinds), a reminder replaces it and rings again, and the outcome replaces it once the
request is closed, wherever it was answered. A device its push service says is gone
(404 / 410) is dropped and shown on the person's notifications page and in doctor.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from starlette.routing import BaseRoute

from adapters.push.pages import PushPages
from adapters.push.payload import closed_payload, request_payload
from adapters.push.sender import PushSender, Sent
from adapters.push.settings import PushSettings
from adapters.push.spec import IDENT
from adapters.push.subscriptions import Device, Devices
from adapters.push.vapid import VapidKeys, load_or_make
from adapters.send_counts import SendCounts
from adapters.taps import tap_route
from bridge.action_tokens import one_tap, token_for
from bridge.crypto import SecretBox
from bridge.doctor import Finding, ok, warn
from bridge.links import link_for
from bridge.models import Request
from bridge.ports import PostResult

if TYPE_CHECKING:
    from adapters.web import WebChannel
    from bridge.ports import BridgeAPI, Clock
    from bridge.store.base import Store

log = logging.getLogger("hitl_bridge.push")
COMPONENT = "channel:push"
TAP_PATH = "/inbox/push/tap"
OPEN = "push-open"  # request id -> {}: a question is showing; the first close replaces it, once
KEEP_OPEN = timedelta(days=2)


class PushChannel:
    name = "push"
    prefixes = ("push:",)

    def __init__(self, settings: PushSettings, store: Store, clock: Clock, box: SecretBox) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.box = box
        self.devices = Devices(store)
        self.collector = SendCounts("push", "Web Push messages by result (gone: the device's subscription "
                                            "expired and was dropped)")
        self.pages = PushPages(self)
        self._bridge: BridgeAPI | None = None
        self._web: WebChannel | None = None
        self._keys: VapidKeys | None = None
        self._sender: PushSender | None = None
        self.dropped_at_start = 0

    def owns(self, target: str) -> bool:
        return target.startswith("push:")

    @property
    def bridge(self) -> BridgeAPI:
        if self._bridge is None:
            raise RuntimeError("the push channel is not started")
        return self._bridge

    @property
    def web(self) -> WebChannel:
        if self._web is None:
            raise RuntimeError("the push channel is not started")
        return self._web

    @property
    def public_key(self) -> str:
        return self._keys.public_key if self._keys is not None else ""

    @property
    def sender(self) -> PushSender:
        if self._sender is None:
            raise RuntimeError("the push channel is not started")
        return self._sender

    async def start(self, bridge: BridgeAPI) -> None:
        self._bridge = bridge
        web = next((c for c in getattr(bridge, "channels", ()) if c.name == "web"), None)
        if web is None:
            raise RuntimeError("push notifications are turned on in the web inbox: keep it enabled")
        self._web = web
        self._keys = await load_or_make(self.store, self.box)
        if self._keys.fresh:
            self.dropped_at_start = await self.devices.drop_all(self.clock.now())
        self._sender = PushSender(self._keys, self.settings.subject, self.settings.timeout_s)
        globals_ = web.inbox.render.env.globals  # the inbox links the manifest and this page
        globals_["app_manifest"] = "/inbox/manifest.webmanifest"
        globals_["push_page"] = "/inbox/push"
        bridge.health.ok(COMPONENT, "ready")

    async def stop(self) -> None:
        if self._sender is not None:
            await self._sender.close()

    def http_routes(self) -> Sequence[BaseRoute]:
        return [*self.pages.routes(), tap_route(TAP_PATH, "push", lambda: self.bridge, self.clock)]

    # sending ------------------------------------------------------------------------------
    def _ttl(self, request: Request, now: datetime) -> int:
        if request.deadline is None:
            return self.settings.ttl_s
        return max(0, min(self.settings.ttl_s, int((request.deadline - now).total_seconds())))

    async def _payload(self, request: Request, handle: str, reminder: bool) -> bytes:
        link = await link_for(self.store, request.id, handle, deadline=request.deadline)
        tap = None
        if one_tap(request):
            token = await token_for(self.store, request.id, handle, deadline=request.deadline)
            tap = f"{TAP_PATH}/{token.token}"
        if request.is_open:
            return request_payload(request, tap_url=tap, open_url=f"/inbox/a/{link.token}", reminder=reminder)
        return closed_payload(request, open_url=f"/inbox/a/{link.token}")

    async def _send_all(self, devices: list[Device], payload: bytes, ttl: int) -> list[Sent]:
        results = list(await asyncio.gather(*(self.sender.send(d, payload, ttl=ttl) for d in devices)))
        now = self.clock.now()
        for result in results:
            if result.ok:
                self.collector.add("sent")
            elif result.gone:
                self.collector.add("gone")
                await self.devices.drop(result.device, result.status, now)
                log.info("push: dropped a device of %s (%s answered %s)", result.device.login,
                         result.device.host, result.status)
            else:
                self.collector.add("failed")
                log.warning("push: sending to a device of %s failed: %s", result.device.login, result.error)
        failed = [r for r in results if not r.ok and not r.gone]
        if failed and not any(r.ok for r in results):
            self.bridge.health.degraded(COMPONENT, f"sending failed: {failed[0].error}",
                                        fix="check that the push service is reachable (hitl-bridge doctor)")
        elif any(r.ok for r in results):
            self.bridge.health.ok(COMPONENT, "sending")
        return results

    async def _send(self, request: Request, target: str, reminder: bool = False) -> PostResult:
        login = target.removeprefix("push:")
        if not IDENT.fullmatch(login):
            return PostResult(target=target, ok=False, error="not a push handle: use push:<inbox login> (permanent)")
        devices = await self.devices.of(login)
        if not devices:
            return PostResult(target=target, ok=False, error=f"{login} has no device with notifications on "
                                                             "(they turn them on at /inbox/push)")
        results = await self._send_all(devices, await self._payload(request, target, reminder),
                                       self._ttl(request, self.clock.now()))
        sent = sum(r.ok for r in results)
        if request.is_open and sent:
            await self.store.kv_put(OPEN, request.id, {}, request.deadline + KEEP_OPEN if request.deadline else None)
        if not sent:
            errors = "; ".join(sorted({r.error or f"gone ({r.status})" for r in results}))
            return PostResult(target=target, ok=False, error=f"no device took it: {errors}")
        return PostResult(target=target, ref={"devices": len(devices), "sent": sent})

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        return list(await asyncio.gather(*(self._send(request, t) for t in targets)))

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        results = await asyncio.gather(*(self._send(request, t, reminder=True) for t in targets))
        failed = {r.target: r.error for r in results if not r.ok}
        if failed:
            await self.bridge.note(request.id, "remind_failed", self.name, {"targets": failed})

    async def update(self, request: Request) -> None:
        """Open: nothing (a vote or an escalation elsewhere does not ring the phone again).
        Closed: the outcome replaces the question on every device it was sent to, once."""
        if request.is_open or not await self.store.kv_delete(OPEN, request.id):
            return
        posts = await self.store.list_posts(request.id, channel=self.name)
        for target in dict.fromkeys(p.target for p in posts if p.ok):
            devices = await self.devices.of(target.removeprefix("push:"))
            if devices:
                await self._send_all(devices, await self._payload(request, target, False), self.settings.ttl_s)

    # operations ---------------------------------------------------------------------------
    async def doctor(self, targets: Sequence[str] = (), responders: Sequence[str] = (),
                     store: object = None) -> list[Finding]:
        """Devices per target, the ones dropped lately, and whether the key survives a restart."""
        findings: list[Finding] = []
        if not self.box.persistent:
            findings.append(warn("push key", "no secrets.key: the VAPID key is lost when the daemon restarts, "
                                 "and every device must turn notifications on again", "set secrets.key"))
        else:
            findings.append(ok("push key", "the VAPID key is kept in the store, sealed with secrets.key"))
        devices = await self.devices.all()
        for target in targets:
            login = target.removeprefix("push:")
            mine = [d for d in devices if d.login == login]
            if mine:
                findings.append(ok(f"push {target}", f"{len(mine)} device(s) with notifications on"))
            else:
                findings.append(warn(f"push {target}", f"{login} has no device with notifications on",
                                     f"{login} logs in to the inbox on their phone and turns them on at /inbox/push"))
        for row in await self.devices.gone(self.clock.now()):
            findings.append(warn(f"push device of {row.get('login')}",
                                 f"dropped at {row.get('at')}: {row.get('host')} answered {row.get('status')} "
                                 "(the browser unsubscribed or the subscription expired)",
                                 "turn notifications on again on that device"))
        return findings
