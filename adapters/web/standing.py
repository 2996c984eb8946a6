"""The inbox's "Standing approvals" page (`/inbox/grants`): the grants people made with
their answers (who, what, until when), each with a Revoke button. A revocation goes to the
core (`BridgeService.revoke_grant`), which makes it hold for the very next call on every
replica; this page only lists and asks.

Forms are guarded like the inbox's others (login, CSRF).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from adapters.web.auth import Viewer
from adapters.web.render import redirect
from bridge.errors import BridgeError
from bridge.policy.pressed import granted_words
from bridge.ports import BridgeAPI, Clock
from bridge.store.concerns.grants import Grant

GRANT_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
Guard = Callable[..., Callable[[Request], Awaitable[Response]]]


@dataclass(frozen=True)
class GrantRow:
    """One grant as the page shows it."""

    id: str
    scope: str  # session | span | always
    allows: str  # "Allowed for 1 hour", "Always allowed"
    pattern: str
    tool: str
    granted_by: str
    where: str  # source · route · session
    created_at: datetime | None
    expires_at: datetime | None
    request_id: str


def grant_row(grant: Grant) -> GrantRow:
    """A stored grant (bridge.policy) as a row."""
    span = (grant.expires_at - grant.created_at).total_seconds() if grant.expires_at else None
    where = " · ".join(part for part in (grant.source, grant.route,
                                         f"session {grant.session}" if grant.session else "") if part)
    return GrantRow(grant.id, grant.scope, granted_words(grant.scope, span), grant.pattern, grant.tool,
                    grant.grantor.display or grant.granted_by, where, grant.created_at, grant.expires_at,
                    grant.request_id)


class StandingApprovals:
    """GET lists the active grants; POST revokes one. `guard` is the inbox's (login, and
    CSRF for `post=True`); `page` renders like every inbox page."""

    def __init__(self, guard: Guard, page: Callable[..., Response], clock: Clock) -> None:
        self.guard = guard
        self.page = page
        self.clock = clock

    def routes(self) -> Sequence[BaseRoute]:
        return [Route("/inbox/grants", self.guard(self.list_page), methods=["GET"]),
                Route("/inbox/grants/{grant_id}/revoke", self.guard(self.revoke, post=True), methods=["POST"])]

    @staticmethod
    def _bridge(request: Request) -> BridgeAPI:
        bridge: BridgeAPI = request.app.state.bridge
        return bridge

    async def list_page(self, request: Request, viewer: Viewer, *, status: int = 200, notice: str = "",
                        problem: str = "") -> Response:
        rows = [grant_row(g) for g in await self._bridge(request).list_grants(active_only=True)]
        notice = notice or {"revoked": "The standing approval was revoked: the next call is asked again."}.get(
            request.query_params.get("done", ""), "")
        return self.page(request, "grants.html", status=status, viewer=viewer, grants=rows, notice=notice,
                         problem=problem, now=self.clock.now())

    async def revoke(self, request: Request, viewer: Viewer) -> Response:
        grant_id = request.path_params["grant_id"]
        if not GRANT_ID.fullmatch(grant_id):
            return await self.list_page(request, viewer, status=404, problem="There is no such standing approval.")
        try:
            await self._bridge(request).revoke_grant(grant_id, actor=viewer.handle)
        except BridgeError as exc:
            return await self.list_page(request, viewer, status=exc.status, problem=str(exc))
        return redirect("/inbox/grants?done=revoked")
