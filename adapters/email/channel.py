"""The email channel (`email:<address>` targets): one mail per recipient with a link to a
signed answer page, reminders and escalations threaded under the first mail, nothing more
once the request is answered (or a short "resolved" mail, when configured).

The answer page (`/inbox/a/<token>`) is served by the web adapter (adapters/web/links.py);
this channel only makes the links (bridge.links) and sends the mail.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from email.headerregistry import Address
from typing import TYPE_CHECKING

from starlette.routing import BaseRoute

from adapters.email.message import Kind, Thread, request_mail, subject_of
from adapters.email.sender import Sender, SendFailed
from adapters.email.settings import EmailSettings
from bridge.doctor import Finding, fail, ok, warn
from bridge.links import link_for
from bridge.models import Request
from bridge.ports import PostResult

if TYPE_CHECKING:
    from bridge.ports import BridgeAPI, Clock
    from bridge.store.base import Store

log = logging.getLogger("hitl_bridge.email")
COMPONENT = "channel:email"


def address_of(target: str) -> Address:
    """`email:ana@example.com` → the recipient; ValueError for anything that is not one
    plain address (no display names, no lists, no header tricks)."""
    text = target.removeprefix("email:").strip()
    if not text or any(c in text for c in "\r\n,;<>\"()[]\\ ") or text.count("@") != 1:
        raise ValueError(f"not an email address: {text[:80]!r}")
    user, _, domain = text.partition("@")
    if not user or "." not in domain or domain.startswith(".") or domain.endswith(".") or len(text) > 254:
        raise ValueError(f"not an email address: {text[:80]!r}")
    return Address(username=user, domain=domain.lower())


class EmailChannel:
    name = "email"
    prefixes = ("email:",)

    def __init__(self, settings: EmailSettings, store: Store, clock: Clock, public_url: str) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.public_url = public_url.rstrip("/")
        self.sender = Sender(settings)
        self._bridge: BridgeAPI | None = None

    def owns(self, target: str) -> bool:
        return target.startswith("email:")

    @property
    def bridge(self) -> BridgeAPI:
        if self._bridge is None:
            raise RuntimeError("the email channel is not started")
        return self._bridge

    async def start(self, bridge: BridgeAPI) -> None:
        self._bridge = bridge
        if self.public_url.startswith(("http://127.", "http://localhost", "http://[::1]")):
            log.warning("email: answer links point at %s, which only this machine can open; set http.public_url "
                        "to the address people reach the bridge at", self.public_url)

    async def stop(self) -> None:
        return None

    def http_routes(self) -> Sequence[BaseRoute]:
        return []  # the answer page is the web inbox's (/inbox/a/<token>)

    # sending ------------------------------------------------------------------------------
    async def _send(self, request: Request, target: str, kind: Kind, thread: Thread | None) -> PostResult:
        try:
            to = address_of(target)
        except ValueError as exc:
            return PostResult(target=target, ok=False, error=f"{exc} (permanent)")
        link = await link_for(self.store, request.id, f"email:{to.addr_spec}", deadline=request.deadline)
        message = request_mail(request, to=to, sender=self.settings.sender, link=f"{self.public_url}/inbox/a/"
                               f"{link.token}", kind=kind, thread=thread, now=self.clock.now(),
                               offers=[o.label for o in self.bridge.grant_offers(request)])
        try:
            await self.sender.send(message)
        except SendFailed as failure:
            log.error("email %s for request %s to %s failed: %s", kind, request.id, to.addr_spec, failure)
            if failure.login:
                self.bridge.health.failing(COMPONENT, str(failure), fix="check email.smtp_url's user and password")
            elif not failure.permanent:
                self.bridge.health.degraded(COMPONENT, f"sending failed after retries: {failure}",
                                            fix="check the SMTP server (hitl-bridge doctor)")
            return PostResult(target=target, ok=False,
                              error=f"{failure} ({'permanent' if failure.permanent else 'gave up after retries'})")
        self.bridge.health.ok(COMPONENT, "sending")
        log.info("email %s for request %s sent to %s", kind, request.id, to.addr_spec)
        return PostResult(target=target, ref={"message_id": str(message["Message-ID"]),
                                              "subject": str(message["Subject"]), "address": to.addr_spec})

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        """One mail per recipient, sent side by side (each paced by the sender)."""
        return list(await asyncio.gather(*(self._send(request, t, "new", None) for t in targets)))

    async def _threads(self, request: Request) -> dict[str, Thread]:
        """The first mail sent to each recipient of this request."""
        threads: dict[str, Thread] = {}
        for post in await self.store.list_posts(request.id, channel=self.name):
            message_id = post.ref.get("message_id")
            if post.ok and isinstance(message_id, str) and post.target not in threads:
                threads[post.target] = Thread(message_id, str(post.ref.get("subject") or subject_of(request)))
        return threads

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        threads = await self._threads(request)
        results = await asyncio.gather(*(self._send(request, t, "reminder", threads.get(t)) for t in targets))
        failed = {r.target: r.error for r in results if not r.ok}
        if failed:
            await self.bridge.note(request.id, "remind_failed", self.name, {"targets": failed})

    async def update(self, request: Request) -> None:
        """Open: nothing to update in a mail already sent. Closed: a short "resolved" mail
        when `send_resolved` is on; otherwise no more mail."""
        if request.is_open or not self.settings.send_resolved:
            return
        threads = await self._threads(request)
        for target, thread in threads.items():
            result = await self._send(request, target, "resolved", thread)
            if not result.ok:
                await self.bridge.note(request.id, "update_failed", self.name, {target: result.error})

    # operations ---------------------------------------------------------------------------
    async def doctor(self, targets: Sequence[str] = (), responders: Sequence[str] = (),
                     store: object = None) -> list[Finding]:
        """`hitl-bridge doctor`: connect, start TLS and log in, as a send would; each target
        an address."""
        server = self.settings.server.describe()
        try:
            await self.sender.check_login()
        except SendFailed as failure:
            fix = "check email.smtp_url's user and password" if failure.login else \
                "check email.smtp_url, starttls and ca_file, and that the server is reachable"
            findings = [fail("email", f"{server}: {failure}", fix)]
        else:
            findings = [ok("email", f"{server}: connected" + (", logged in" if self.settings.server.username else ""))]
        for target in targets:
            try:
                address_of(target)
            except ValueError as exc:
                findings.append(fail(f"email {target}", str(exc), "use email:name@example.com"))
        if self.public_url.startswith(("http://127.", "http://localhost", "http://[::1]")):
            findings.append(warn("email links", f"answer links point at {self.public_url}, which only this "
                                 "machine can open", "set http.public_url"))
        return findings
