"""The inbox's batch view and away form: alike requests waiting for the viewer, offered
together (all selected; untick the ones to leave out), a preview of what will be decided,
then a result per item; and "away until …, delegate to …". Grouping, each item's rules and
the windows are the core's (bridge.batches, bridge.delegation); these pages only read forms
and show results."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from adapters.web.auth import Viewer
from adapters.web.render import redirect
from bridge.away_words import instant
from bridge.batches import MAX_BATCH, approvable, batches
from bridge.delegation import DelegationRefused
from bridge.errors import BridgeError
from bridge.models import OPEN_STATES, Responder
from bridge.models import Request as BridgeRequest
from bridge.store.query import RequestQuery

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from adapters.web.mine import Me
    from bridge.service import BridgeService


class Inbox(Protocol):
    """What these pages use of the inbox (adapters.web.pages): its guard, pages and reads."""

    def _guard(self, handler: Callable[[Request, Viewer], Awaitable[Response]], *, api: bool = False,
               post: bool = False) -> Callable[[Request], Awaitable[Response]]: ...

    def _page(self, request: Request, template: str, *, status: int = 200, viewer: Viewer | None = None,
              **context: Any) -> Response: ...

    def _message(self, request: Request, status: int, heading: str, text: str,
                 viewer: Viewer | None = None) -> Response: ...

    @staticmethod
    def _service(request: Request) -> BridgeService: ...

    def _me(self, request: Request, viewer: Viewer) -> Me | None: ...

SCANNED = 1000
VERBS = {"yes": "approve", "no": "reject"}


class BatchPages:
    """/inbox/batches (list, preview, answer) and /inbox/away (set, end)."""

    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox

    def routes(self) -> list[BaseRoute]:
        guard = self.inbox._guard
        return [
            Route("/inbox/batches", guard(self.list_page), methods=["GET"]),
            Route("/inbox/batches/preview", guard(self.preview, post=True), methods=["POST"]),
            Route("/inbox/batches/answer", guard(self.answer, post=True), methods=["POST"]),
            Route("/inbox/away", guard(self.away_page), methods=["GET"]),
            Route("/inbox/away", guard(self.set_away, post=True), methods=["POST"]),
            Route("/inbox/away/end", guard(self.end_away, post=True), methods=["POST"]),
        ]

    @staticmethod
    def _responder(viewer: Viewer) -> Responder:
        return Responder(platform=viewer.platform, user_id=viewer.identity, name=viewer.display)

    async def _waiting(self, request: Request, viewer: Viewer) -> list[BridgeRequest]:
        service = self.inbox._service(request)
        who = self.inbox._me(request, viewer)
        query = who.query() if who is not None else RequestQuery(states=tuple(sorted(OPEN_STATES)))
        return list(await service.store.find_requests(query, limit=SCANNED))

    async def list_page(self, request: Request, viewer: Viewer) -> Response:
        service = self.inbox._service(request)
        found = [b for b in batches(await self._waiting(request, viewer), service.route_of) if approvable(b)]
        return self.inbox._page(request, "batches.html", viewer=viewer, batches=found, limit=MAX_BATCH)

    def _chosen(self, request: Request) -> tuple[list[str], list[str], str]:
        form: dict[str, list[str]] = request.state.form
        offered = list(dict.fromkeys(form.get("offered", [])))[:MAX_BATCH + 1]
        picked = set(form.get("id", []))
        value = (form.get("value") or [""])[0]
        return [i for i in offered if i in picked], [i for i in offered if i not in picked], value

    async def preview(self, request: Request, viewer: Viewer) -> Response:
        """What will be decided: the chosen items, the ones left out, and the answer; nothing
        is recorded until it is sent."""
        chosen, left_out, value = self._chosen(request)
        problem = self._problem(chosen, left_out, value)
        if problem:
            return self.inbox._message(request, 422, "Nothing to decide", problem, viewer)
        service = self.inbox._service(request)
        items = [r for r in [await service.get(i) for i in [*chosen, *left_out]] if r is not None]
        titles = {r.id: r.title for r in items}
        reason = ((request.state.form.get("reason") or [""])[0]).strip()[:2000]
        return self.inbox._page(request, "batch_preview.html", viewer=viewer, chosen=chosen, left_out=left_out,
                                titles=titles, value=value, verb=VERBS[value], reason=reason)

    @staticmethod
    def _problem(chosen: list[str], left_out: list[str], value: str) -> str:
        if value not in VERBS:
            return "Choose Approve or Reject."
        if len(chosen) + len(left_out) > MAX_BATCH:
            return f"A batch decides at most {MAX_BATCH} requests."
        if not chosen:
            return "Every request of the batch was left out: there is nothing to decide."
        return ""

    async def answer(self, request: Request, viewer: Viewer) -> Response:
        chosen, left_out, value = self._chosen(request)
        problem = self._problem(chosen, left_out, value)
        if problem:
            return self.inbox._message(request, 422, "Nothing to decide", problem, viewer)
        service = self.inbox._service(request)
        reason = ((request.state.form.get("reason") or [""])[0]).strip()[:2000] or None
        try:
            result = await service.answer_batch(chosen, self._responder(viewer), via="web", value=value,
                                                reason=reason)
        except BridgeError as exc:
            return self.inbox._message(request, exc.status, "Not decided", str(exc), viewer)
        items = [r for r in [await service.get(i) for i in [*chosen, *left_out]] if r is not None]
        return self.inbox._page(request, "batch_results.html", viewer=viewer, result=result,
                                titles={r.id: r.title for r in items}, left_out=left_out)

    # away ---------------------------------------------------------------------------------
    async def away_page(self, request: Request, viewer: Viewer, *, problem: str = "", status: int = 200) -> Response:
        service = self.inbox._service(request)
        person = service.people.person_of(viewer.handle)
        return self.inbox._page(request, "away.html", status=status, viewer=viewer, person=person,
                                people=[p for p in service.people.people if p != person],
                                windows=await service.delegations(), problem=problem,
                                done=request.query_params.get("done", ""))

    async def set_away(self, request: Request, viewer: Viewer) -> Response:
        form: dict[str, list[str]] = request.state.form
        service = self.inbox._service(request)
        field = {k: (v[0] if v else "") for k, v in form.items()}
        try:
            until = instant(field.get("until", "").strip()[:40])
            starts = instant(field["starts"].strip()[:40]) if field.get("starts") else None
            await service.away(viewer.handle, field.get("delegate", "")[:64], until, starts=starts, by=viewer.handle)
        except (BridgeError, ValueError) as exc:
            return await self.away_page(request, viewer, problem=str(exc), status=422)
        return redirect("/inbox/away?done=set")

    async def end_away(self, request: Request, viewer: Viewer) -> Response:
        service = self.inbox._service(request)
        try:
            person = service.person_acting(self._responder(viewer))
        except DelegationRefused as exc:
            return await self.away_page(request, viewer, problem=str(exc), status=422)
        await service.back(person)
        return redirect("/inbox/away?done=ended")

