"""The web inbox channel (target `web`): every request is shown from the store at /inbox.

Posting needs no platform call (the inbox reads the store, and its pages refresh themselves
with ETag polling), so the web channel works with no account and no token at all.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute

from adapters.web.auth import InboxAuth
from adapters.web.pages import Inbox
from adapters.web.settings import WebConfig
from bridge.models import Request
from bridge.ports import BridgeAPI, PostResult
from bridge.registry import AdapterContext

log = logging.getLogger("hitl_bridge.web")


class WebChannel:
    name = "web"
    prefixes = ("web",)
    updates_copies = False  # open pages poll their fragment: `update` has nothing to do

    def __init__(self, config: WebConfig, ctx: AdapterContext) -> None:
        self.config = config
        http = ctx.settings.http
        self.auth = InboxAuth(config, api_tokens={n: t.token for n, t in http.api_tokens.items()},
                              loopback_only=http.loopback_only, base_secret=ctx.settings.secrets.key)
        self.inbox = Inbox(config, self.auth, ctx.clock)
        self.collector = self.inbox.looks  # live looks held, refused, rendered: on /metrics
        self.bridge: BridgeAPI | None = None
        if config.session_secret is None and ctx.settings.secrets.key is None and not self.auth.open:
            log.info("web: no session_secret or secrets.key: inbox logins end when the daemon restarts")

    def owns(self, target: str) -> bool:
        return target == "web" or target.startswith("web:")

    async def start(self, bridge: BridgeAPI) -> None:
        self.bridge = bridge
        await self.auth.attach(bridge.store)  # sessions live in the store

    async def stop(self) -> None:
        return None

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        return self.copies_in_store(request, targets)

    def copies_in_store(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        """Nothing to send: the inbox lists every stored request; the copy is recorded
        (bridge.ports.PostsInStore: a new request's copy is stored with it)."""
        return [PostResult(target=t, ref={"path": f"/inbox/r/{request.id}"}) for t in targets]

    async def update(self, request: Request) -> None:
        return None  # open pages poll their fragment and see the change

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        return None  # the list shows the countdown; there is nobody to nudge

    def http_routes(self) -> Sequence[BaseRoute]:
        return self.inbox.routes()


def build_channel(section: dict[str, Any], ctx: AdapterContext) -> WebChannel:
    return WebChannel(ctx.parse(WebConfig, section), ctx)
