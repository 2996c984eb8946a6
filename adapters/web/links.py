"""The answer page behind a per-recipient link (`/inbox/a/<token>`, sent by email): no login,
bound to one request and one recipient, and closed with the request.

Opening the page never answers (mail scanners and previews fetch links); only a POST of
the page's own form does, with the same CSRF protection as the inbox. The answer is
recorded as the recipient's handle (`email:<address>`), which `people:` maps to a person.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from adapters.web import views
from adapters.web.answers import parse_answer
from adapters.web.auth import CSRF_COOKIE, InboxAuth
from adapters.web.confirm import check_step
from adapters.web.grants import approving_form, pressed_grant
from adapters.web.render import Renderer, browser_id, is_secure, read_form, redirect
from adapters.web.request_view import progress, reading
from bridge.errors import BridgeError
from bridge.links import AnswerLink, resolve
from bridge.models import Request as BridgeRequest
from bridge.models import Responder
from bridge.service import BridgeService

FIX_BELOW = "Some answers need fixing (see below)."
STALE = "This form is stale or did not come from this page. Reload it and try again."
NOT_VALID = ("This link is not valid", "Check that the whole link was opened (mail programs sometimes cut "
             "long links), or answer in the inbox or chat instead.")


class LinkPages:
    """GET shows the request and its form; POST answers."""

    def __init__(self, render: Renderer, auth: InboxAuth) -> None:
        self.render = render
        self.auth = auth

    def routes(self) -> Sequence[BaseRoute]:
        return [Route("/inbox/a/{token}", self.page, methods=["GET"]),
                Route("/inbox/a/{token}", self.answer, methods=["POST"]),
                Route("/inbox/a/{token}/confirm", self.confirm, methods=["POST"])]

    @staticmethod
    def _service(request: Request) -> BridgeService:
        service: BridgeService = request.app.state.bridge
        return service

    async def _open(self, request: Request) -> tuple[AnswerLink, BridgeRequest] | None:
        service = self._service(request)
        link = await resolve(service.store, request.path_params["token"], service.clock.now())
        if link is None:
            return None
        found = await service.get(link.request_id)
        return None if found is None else (link, found)

    async def _show(self, request: Request, link: AnswerLink, found: BridgeRequest, *, status: int = 200,
                    notice: str = "", problem: str = "", errors: dict[str, str] | None = None,
                    prior: dict[str, object] | None = None) -> Response:
        browser, cookies = browser_id(request, self.auth)
        service = self._service(request)
        outcome = "" if found.is_open else views.closed_message(found).capitalize()
        return self.render.page(
            "link.html", status=status, cookies=cookies, secure=is_secure(request),
            csrf=self.auth.csrf_token(browser), viewer=None, open_mode=False, token=link.token,
            recipient=link.handle.partition(":")[2], notice=notice, problem=problem, errors=errors or {},
            prior=prior or {}, outcome=outcome, **reading(found, service.clock.now(), service.grant_offers(found)),
            **await progress(service, found))

    def _not_valid(self, request: Request, status: int = 404) -> Response:
        browser, cookies = browser_id(request, self.auth)
        heading, text = NOT_VALID
        return self.render.page("message.html", status=status, cookies=cookies, secure=is_secure(request),
                                csrf=self.auth.csrf_token(browser), viewer=None, open_mode=False,
                                heading=heading, text=text)

    async def _checked_form(self, request: Request) -> dict[str, list[str]] | None:
        """The posted form when it came from this page (CSRF cookie and token), else None."""
        form = await read_form(request)
        given = (form or {}).get("csrf", [None])[0]
        if form is None or not request.cookies.get(CSRF_COOKIE) or not self.auth.csrf_ok(request, None, given):
            return None
        return form

    async def page(self, request: Request) -> Response:
        opened = await self._open(request)
        if opened is None:
            return self._not_valid(request)
        link, found = opened
        notice = {"answered": "Your answer was recorded. Thank you.",
                  "voted": "Your vote was recorded; the request needs more approvals."}.get(
            request.query_params.get("done", ""), "")
        return await self._show(request, link, found, status=200 if found.is_open or notice else 410, notice=notice)

    async def _posted(self, request: Request) -> tuple[AnswerLink, BridgeRequest, dict[str, list[str]]] | Response:
        """What every POST checks first: a valid link, a form from this page, an open request.
        Returns the link, the request and the form, or the page that says why not."""
        opened = await self._open(request)
        if opened is None:
            return self._not_valid(request)
        link, found = opened
        form = await self._checked_form(request)
        if form is None:
            return await self._show(request, link, found, status=403, problem=STALE)
        if not found.is_open:
            return await self._show(request, link, found, status=409, problem=views.closed_message(found))
        return link, found, form

    async def answer(self, request: Request) -> Response:
        posted = await self._posted(request)
        if isinstance(posted, Response):
            return posted
        link, found, form = posted
        service = self._service(request)
        grant = pressed_grant(service.grant_offers(found), form)
        parsed = parse_answer(found.questions, approving_form(found, form))
        if grant.problem:
            return await self._show(request, link, found, status=422, prior=parsed.prior, problem=grant.problem)
        if not parsed.ok:
            return await self._show(request, link, found, status=422, errors=parsed.errors, prior=parsed.prior,
                                    problem=FIX_BELOW)
        platform, _, address = link.handle.partition(":")
        responder = Responder(platform=platform, user_id=address, name=address)
        try:
            updated = await service.answer(found.id, responder, parsed.values, via=platform, reason=parsed.reason,
                                           grant=grant.choice)
        except BridgeError as exc:
            current = await service.get(found.id) or found
            return await self._show(request, link, current, status=exc.status, problem=str(exc), prior=parsed.prior)
        return redirect(f"/inbox/a/{link.token}?done={'voted' if updated.is_open else 'answered'}")

    async def confirm(self, request: Request) -> Response:
        """The check step for pages without JavaScript: records nothing."""
        posted = await self._posted(request)
        if isinstance(posted, Response):
            return posted
        link, found, form = posted
        if found.secret_question_ids:
            return await self._show(request, link, found, status=400,
                                    problem="Answers with a secret are sent directly: send the form.")
        grant = pressed_grant(self._service(request).grant_offers(found), form)
        form = approving_form(found, form)
        parsed = parse_answer(found.questions, form)
        if grant.problem or not parsed.ok:
            return await self._show(request, link, found, status=422, errors=parsed.errors, prior=parsed.prior,
                                    problem=grant.problem or FIX_BELOW)
        browser, cookies = browser_id(request, self.auth)
        return self.render.page(
            "confirm.html", cookies=cookies, secure=is_secure(request), csrf=self.auth.csrf_token(browser),
            viewer=None, open_mode=False, r=found, form_action=f"/inbox/a/{link.token}",
            back_url=f"/inbox/a/{link.token}", **check_step(found, form, parsed, grant.label))
