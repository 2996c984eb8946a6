"""The inbox's "Standing approvals" page (`/inbox/grants`): the grants people made with
their answers (who, what, until when), each with a Revoke button. A revocation goes to the
core (`BridgeService.revoke_grant`), which makes it hold for the very next call on every
replica; this page only lists and asks.

Forms are guarded like the inbox's others (login, CSRF); the grants come from the policy
core, and a build without it says so rather than failing.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from adapters.web.auth import Viewer
from adapters.web.render import redirect
from bridge.errors import BridgeError
from bridge.policy.pressed import granted_words

GRANT_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
Guarded = Callable[[Request, Viewer], Awaitable[Response]]
Guard = Callable[..., Callable[[Request], Awaitable[Response]]]


class GrantBook(Protocol):
    """The policy core's grants, as the page needs them (bridge.service.BridgeService)."""

    async def list_grants(self, *, active_only: bool = True) -> Sequence[Any]: ...

    async def revoke_grant(self, grant_id: str, *, actor: str) -> Any: ...


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


def grant_row(grant: Any) -> GrantRow:
    """A stored grant (bridge.policy) as a row; reads attributes only, never mutates."""
    def text(name: str) -> str:
        value = getattr(grant, name, None)
        return "" if value is None else str(getattr(value, "value", value))

    created, expires = getattr(grant, "created_at", None), getattr(grant, "expires_at", None)
    span = (expires - created).total_seconds() if created and expires else None
    where = " · ".join(part for part in (text("source"), text("route"),
                                         f"session {text('session')}" if text("session") else "") if part)
    grantor = getattr(grant, "grantor", None)
    who = str(getattr(grantor, "display", "") or "") or text("granted_by")
    return GrantRow(text("id"), text("scope"), granted_words(text("scope"), span), text("pattern"), text("tool"),
                    who, where, created, expires, text("request_id"))


def grant_book(service: object) -> GrantBook | None:
    """The service's grants, or None in a build without the policy core."""
    if not (hasattr(service, "list_grants") and hasattr(service, "revoke_grant")):
        return None
    return cast(GrantBook, service)


class StandingApprovals:
    """GET lists the active grants; POST revokes one. `guard` is the inbox's (login, and
    CSRF for `post=True`); `page` and `message` render like every inbox page."""

    def __init__(self, guard: Guard, page: Callable[..., Response], message: Callable[..., Response]) -> None:
        self.guard = guard
        self.page = page
        self.message = message

    def routes(self) -> Sequence[BaseRoute]:
        return [Route("/inbox/grants", self.guard(self.list_page), methods=["GET"]),
                Route("/inbox/grants/{grant_id}/revoke", self.guard(self.revoke, post=True), methods=["POST"])]

    async def _rows(self, request: Request) -> list[GrantRow] | None:
        book = grant_book(request.app.state.bridge)
        if book is None:
            return None
        return [grant_row(g) for g in await book.list_grants(active_only=True)]

    async def list_page(self, request: Request, viewer: Viewer, *, status: int = 200, notice: str = "",
                        problem: str = "") -> Response:
        rows = await self._rows(request)
        notice = notice or {"revoked": "The standing approval was revoked: the next call is asked again."}.get(
            request.query_params.get("done", ""), "")
        return self.page(request, "grants.html", status=status, viewer=viewer, grants=rows or [],
                         available=rows is not None, notice=notice, problem=problem,
                         now=request.app.state.bridge.clock.now())

    async def revoke(self, request: Request, viewer: Viewer) -> Response:
        grant_id = request.path_params["grant_id"]
        book = grant_book(request.app.state.bridge)
        if book is None:
            return self.message(request, 404, "Not available", "This bridge keeps no standing approvals.", viewer)
        if not GRANT_ID.fullmatch(grant_id):
            return await self.list_page(request, viewer, status=404, problem="There is no such standing approval.")
        try:
            await book.revoke_grant(grant_id, actor=viewer.handle)
        except BridgeError as exc:
            return await self.list_page(request, viewer, status=exc.status, problem=str(exc))
        return redirect("/inbox/grants?done=revoked")
