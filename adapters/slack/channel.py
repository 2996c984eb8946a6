"""The Slack channel (bridge.ports.Channel) on slack-bolt's AsyncApp, put together from
its parts: receiving (receiver.py: the HTTP route or Socket Mode, feeding Bolt), the
listeners (interactions.py, home.py: they get a `ListenerPort`, never this object),
rendering (blocks.py, modals.py: pure), and sending (sender.py, under copies.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import aiohttp
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from starlette.routing import BaseRoute

from adapters.slack.batch import BatchListeners
from adapters.slack.calls import ChannelPacer, Retrier, SlackCallFailed
from adapters.slack.copies import Copies
from adapters.slack.directory import Directory
from adapters.slack.doctor import Asked, diagnose
from adapters.slack.health import SlackHealth
from adapters.slack.home import HomeTab
from adapters.slack.interactions import Interactions
from adapters.slack.port import ChannelPort
from adapters.slack.receiver import SlackReceiver
from adapters.slack.sender import SlackSender
from adapters.slack.settings import SlackSettings
from adapters.slack.targets import BadTarget, parse_target
from bridge.models import Request, Responder
from bridge.ports import BridgeAPI, PostResult

if TYPE_CHECKING:
    from bridge.doctor import Finding
    from bridge.store.base import Store

log = logging.getLogger("hitl_bridge.slack")


class SlackChannel:
    """Posts requests to `slack:` targets and reports clicks, modals and thread replies."""

    name = "slack"
    prefixes = ("slack:",)

    def __init__(self, settings: SlackSettings) -> None:
        self.settings = settings
        self.client = AsyncWebClient(
            token=settings.bot_token.get_secret_value(),
            base_url=settings.api_url,
            timeout=settings.request_timeout_s,  # type: ignore[arg-type]  # aiohttp takes floats
            retry_handlers=[AsyncConnectionErrorRetryHandler(),
                            AsyncRateLimitErrorRetryHandler(max_retry_count=3)],
        )
        self.reporter = SlackHealth()  # channel:slack in the health registry, once started
        retrier = Retrier(max_attempts=settings.max_attempts, backoff_s=settings.backoff_s,
                          observer=self.reporter.observe)
        self.sender = SlackSender(self.client, retrier, ChannelPacer(settings.post_interval_s))
        self.directory = Directory(self.client, retrier, ttl_s=settings.usergroup_cache_s)
        self.copies = Copies(lambda: self.api, self.sender, self.directory,
                             group_dm_limit=settings.group_dm_limit)
        self.receiver = SlackReceiver(settings, self.client, self.reporter)
        port = ChannelPort(lambda: self.api, self.sender, self.directory, ack_budget_s=settings.ack_budget_s)
        Interactions(port).register(self.receiver.app)
        HomeTab(port).register(self.receiver.app)
        BatchListeners(lambda: self.api, self.sender, self.directory).register(self.receiver.app)  # /hitl
        self._api: BridgeAPI | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def api(self) -> BridgeAPI:
        if self._api is None:
            raise RuntimeError("the Slack channel is not started")
        return self._api

    # lifecycle ---------------------------------------------------------------------------------
    async def start(self, bridge: BridgeAPI) -> None:
        self._api = bridge
        self.reporter.attach(bridge.health)
        self._session = aiohttp.ClientSession()
        self.client.session = self._session
        try:  # a refused token is reported (channel:slack failing, /readyz 503), not fatal
            me = await self.sender.whoami()
            log.info("slack: connected as %s in %s", me.get("user"), me.get("team"))
            self.reporter.connected(str(me.get("user")), str(me.get("team")))
        except SlackCallFailed as exc:
            if exc.network:
                self.reporter.unreachable(self.settings.api_url, exc.error)
            else:
                self.reporter.observe(exc.code)
        self.receiver.start()

    async def stop(self) -> None:
        await self.receiver.stop()
        if self._session is not None:
            await self._session.close()
            self._session = None

    def http_routes(self) -> Sequence[BaseRoute]:
        return self.receiver.http_routes()

    # Channel port --------------------------------------------------------------------------------
    async def doctor(self, targets: Sequence[str], responders: Sequence[str], store: Store) -> list[Finding]:
        """`hitl-bridge doctor`: the token, its scopes, and each target, asked of Slack now."""
        return await diagnose(Asked(self.client, self.directory, self.settings), targets, responders, store)

    def owns(self, target: str) -> bool:
        return target.startswith("slack:")

    async def is_member(self, entry: str, responder: Responder) -> bool:
        """Called by the core for `slack:` responders entries: a user id or a `@group`."""
        if responder.platform != "slack":
            return False
        try:
            target = parse_target(entry)
        except BadTarget:
            return False
        if target.kind == "user":
            return target.value == responder.user_id
        if target.kind == "usergroup":
            return responder.user_id in await self.directory.group_members(target.value)
        return False

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        return await self.copies.post(request, targets)

    async def update(self, request: Request) -> None:
        await self.copies.update(request)

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        await self.copies.remind(request, targets)
