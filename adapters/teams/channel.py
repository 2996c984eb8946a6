"""The Teams channel (bridge.ports.Channel) on the Teams SDK, put together from its parts:
receiving (receiver.py: `/teams/messages`, JWT-checked by auth.py), the invokes
(invokes.py), rendering (cards.py: pure), and sending (connector.py, under copies.py)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from starlette.routing import BaseRoute

from adapters.teams.auth import ActivityAuth
from adapters.teams.connector import Connector, TeamsCallFailed
from adapters.teams.copies import Copies
from adapters.teams.doctor import diagnose
from adapters.teams.health import TeamsHealth
from adapters.teams.invokes import Invokes
from adapters.teams.metrics import TeamsFigures
from adapters.teams.receiver import Receiver
from adapters.teams.references import References
from adapters.teams.settings import TeamsSettings
from adapters.teams.targets import BadTarget, parse_target
from bridge.models import Request, Responder
from bridge.ports import BridgeAPI, PostResult

if TYPE_CHECKING:
    from bridge.doctor import Finding
    from bridge.store.base import Store

log = logging.getLogger("hitl_bridge.teams")


class TeamsChannel:
    """Posts requests to `teams:` targets as Adaptive Cards and reports Action.Execute
    clicks and dialog submissions."""

    name = "teams"
    prefixes = ("teams:",)

    def __init__(self, settings: TeamsSettings, store: Store) -> None:
        self.settings = settings
        self.reporter = TeamsHealth()
        self.connector = Connector(settings, self.reporter.observe)
        self.references = References(store)
        self.copies = Copies(lambda: self.api, self.connector, self.references, settings.tenant_id)
        self.auth = ActivityAuth(settings)
        self.receiver = Receiver(self.auth, self.references, Invokes(lambda: self.api, self.copies),
                                 settings.max_body_bytes)
        self.collector = TeamsFigures(self.auth, self.connector)  # on /metrics
        self._api: BridgeAPI | None = None

    @property
    def api(self) -> BridgeAPI:
        if self._api is None:
            raise RuntimeError("the Teams channel is not started")
        return self._api

    @property
    def refused(self) -> dict[str, int]:
        """Inbound calls refused since start, by reason (forged, expired, audience, …)."""
        return dict(self.auth.refused)

    async def start(self, bridge: BridgeAPI) -> None:
        self._api = bridge
        self.reporter.attach(bridge.health)
        try:  # a refused credential is reported (channel:teams failing, /readyz 503), not fatal
            await self.connector.token()
        except TeamsCallFailed as exc:
            log.warning("teams: no token at start: %s", exc)
            if exc.status == 400:  # AADSTS errors for a wrong secret come as 400 invalid_client
                self.reporter.observe("refused")

    async def stop(self) -> None:
        await self.connector.close()

    def http_routes(self) -> Sequence[BaseRoute]:
        return self.receiver.http_routes()

    async def doctor(self, targets: Sequence[str], responders: Sequence[str], store: Store) -> list[Finding]:
        """`hitl-bridge doctor`: a token, then each target, asked of Microsoft now."""
        return await diagnose(self.connector, References(store), self.settings.tenant_id, targets)

    def owns(self, target: str) -> bool:
        return target.startswith("teams:")

    async def is_member(self, entry: str, responder: Responder) -> bool:
        """`teams:user:<id>` in responders names that one person."""
        if responder.platform != "teams":
            return False
        try:
            target = parse_target(entry)
        except BadTarget:
            return False
        return target.kind == "user" and target.value == responder.user_id

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        return await self.copies.post(request, targets)

    async def update(self, request: Request) -> None:
        await self.copies.update(request)

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        await self.copies.remind(request, targets)
