"""The inbox pages at /inbox: list, one request (answer form, timeline, retry), live fragments,
login and logout. Every handler reads the core through `request.app.state.bridge`."""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from adapters.web import listing, views
from adapters.web.answers import ParsedAnswer, parse_answer
from adapters.web.auth import (
    COOKIE_PATH,
    CSRF_COOKIE,
    SESSION_COOKIE,
    SESSION_PATH,
    InboxAuth,
    LoginRefused,
    Viewer,
)
from adapters.web.batch import BatchPages
from adapters.web.confirm import check_step
from adapters.web.grants import approving_form, pressed_grant
from adapters.web.insights_view import page_context
from adapters.web.links import LinkPages
from adapters.web.listing import ListState
from adapters.web.live import LiveLooks
from adapters.web.mine import Me, me
from adapters.web.render import STATIC, Renderer, browser_id, is_secure, read_form, redirect
from adapters.web.request_view import request_view
from adapters.web.settings import NAME_PATTERN, WebConfig
from adapters.web.standing import StandingApprovals
from bridge.audit.insights import gather
from bridge.errors import BridgeError
from bridge.http.throttle import client_key
from bridge.models import Request as BridgeRequest
from bridge.models import Responder
from bridge.ports import Clock, source_problems
from bridge.service import BridgeService

ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
#: a live fragment asked with the version the page last saw (the `X-Live-Seen` header) is held
#: until something changes, at most this long: an open tab costs nothing while nothing happens
LIVE_HOLD_S = 25.0
SEEN_HEADER = "x-live-seen"
VERSION_HEADER = "X-Live-Version"
OPERATOR_PAGES = ("/docs", "/openapi.json", "/metrics", "/redoc")  # opened by an inbox session too
Handler = Callable[[Request], Awaitable[Response]]


class Inbox:
    """Serves the inbox; `routes()` is what the web channel mounts into the bridge's app."""

    def __init__(self, config: WebConfig, auth: InboxAuth, clock: Clock) -> None:
        self.config = config
        self.auth = auth
        self.clock = clock
        self.render = Renderer(config.title, config.poll_interval_s)
        self.looks = LiveLooks(config.live_held_per_session, config.live_held_per_address,
                               pace_s=config.poll_interval_s)

    def routes(self) -> Sequence[BaseRoute]:
        return [
            Route("/inbox", self._guard(self.list_page), methods=["GET"]),
            Route("/inbox/", self._guard(self.list_page), methods=["GET"]),
            Route("/inbox/live", self._guard(self.list_live, api=True), methods=["GET"]),
            Route("/inbox/r/{request_id}", self._guard(self.detail_page), methods=["GET"]),
            Route("/inbox/r/{request_id}/live", self._guard(self.detail_live, api=True), methods=["GET"]),
            Route("/inbox/r/{request_id}/answer", self._guard(self.answer, post=True), methods=["POST"]),
            Route("/inbox/r/{request_id}/confirm", self._guard(self.confirm, post=True), methods=["POST"]),
            Route("/inbox/r/{request_id}/retry", self._guard(self.retry, post=True), methods=["POST"]),
            Route("/inbox/insights", self._guard(self.insights_page), methods=["GET"]),
            Route("/inbox/login", self.login_page, methods=["GET"]),
            Route("/inbox/login", self.login, methods=["POST"]),
            Route("/inbox/logout", self.logout, methods=["POST"]),
            *LinkPages(self.render, self.auth).routes(),
            *BatchPages(self).routes(),  # /inbox/batches, /inbox/away
            *StandingApprovals(self._guard, self._page, self.clock).routes(),
            Mount("/inbox/static", app=StaticFiles(directory=STATIC), name="inbox-static"),
        ]

    # plumbing -----------------------------------------------------------------------------
    def _guard(self, handler: Callable[[Request, Viewer], Awaitable[Response]], *, api: bool = False,
               post: bool = False) -> Handler:
        """Log in first (401 for live fragments, a redirect for pages); CSRF on every POST."""

        async def guarded(request: Request) -> Response:
            viewer = await self.auth.viewer(request)
            if viewer is None:
                if request.headers.get("authorization", "").lower().startswith("bearer "):
                    # a script with a wrong token: 401, which the bridge's throttle counts
                    return self._message(request, 401, "Wrong token", "That token opens nothing here.")
                if api or post:
                    return self._message(request, 401, "Log in first", "Your session ended: log in again.")
                return redirect("/inbox/login?" + urlencode({"next": request.url.path}))
            if post:
                form = await self._form(request)
                if form is None:
                    return self._message(request, 400, "Unreadable form", "The form could not be read.")
                if not self.auth.csrf_ok(request, viewer, _first(form, "csrf")):
                    return self._message(request, 403, "Refused",
                                         "This form is stale or did not come from this inbox. "
                                         "Reload the page and try again.")
                request.state.form = form
            return await handler(request, viewer)

        return guarded

    async def _form(self, request: Request) -> dict[str, list[str]] | None:
        return await read_form(request)

    def _browser(self, request: Request) -> tuple[str, dict[str, str]]:
        return browser_id(request, self.auth)

    def _page(self, request: Request, template: str, *, status: int = 200,
              viewer: Viewer | None = None, **context: Any) -> Response:
        browser_id, cookies = self._browser(request)
        return self.render.page(template, status=status, cookies=cookies, secure=is_secure(request),
                                csrf=self.auth.csrf_token(browser_id), viewer=viewer,
                                open_mode=self.auth.open, **context)

    def _message(self, request: Request, status: int, heading: str, text: str,
                 viewer: Viewer | None = None) -> Response:
        return self._page(request, "message.html", status=status, viewer=viewer, heading=heading, text=text)

    @staticmethod
    def _service(request: Request) -> BridgeService:
        service: BridgeService = request.app.state.bridge
        return service

    # list ---------------------------------------------------------------------------------
    def _me(self, request: Request, viewer: Viewer) -> Me | None:
        return me(self._service(request).people, viewer)

    async def _list(self, request: Request, viewer: Viewer, state: ListState,
                    current: str = "") -> dict[str, Any]:
        """The list's context (rows, tab counts, filters, problems) for any page that shows it."""
        service = self._service(request)
        settings = request.app.state.settings
        who = self._me(request, viewer)
        routes = [r.name for r in settings.routes if r.name] + [settings.default_route.name or "default"]
        problems = {name: source_problems(source) for name, source in service.sources.items()}
        live = state.params() + (f"&current={current}" if current else "")
        return {
            "state": state, "current": current,
            "rows": await listing.rows(service, state, who, self.clock.now(), self.config.page_size),
            "counts": await listing.tab_counts(service, state, who),
            "sources": sorted(service.sources), "routes": routes,
            "source_problems": {name: found for name, found in sorted(problems.items()) if found},
            "live_url": "/inbox/live?" + live.lstrip("&"), "page_size": self.config.page_size,
        }

    def _state(self, request: Request, viewer: Viewer) -> ListState:
        return ListState.from_params(request.query_params)

    async def list_page(self, request: Request, viewer: Viewer) -> Response:
        context = await self._list(request, viewer, self._state(request, viewer))
        return self._page(request, "list.html", viewer=viewer, now=self.clock.now(), **context)

    async def _hold(self, request: Request) -> str | None:
        """Wait until anything changed since the version the page saw (at once for none, a stale
        or another replica's); the version now, taken before the fragment is read, so a change
        while it is rendered shows at the next look. None: this session or address already
        holds as many looks as it may (`adapters.web.live`)."""
        feed = self._service(request).changes
        seen = request.headers.get(SEEN_HEADER, "")[:80]
        keys = self.looks.keys(_session_key(request), client_key(request.client.host if request.client else None))
        if seen != feed.token:  # nothing to hold: changed since, another replica's, or none
            await self._in_turn(request, keys)
            return feed.token
        with self.looks.slot(keys) as held:
            if not held:
                return None
            changed = asyncio.ensure_future(feed.until_changed(seen, LIVE_HOLD_S))
            gone = asyncio.ensure_future(_disconnected(request))  # a closed tab lets go at once
            try:
                await asyncio.wait({changed, gone}, return_when=asyncio.FIRST_COMPLETED)
                woken = changed.done() and not gone.done()
            finally:
                for task in (changed, gone):
                    task.cancel()
            if woken:
                await self._in_turn(request, keys)
        return feed.token

    async def _in_turn(self, request: Request, keys: tuple[str, str]) -> None:
        """Wait while this session or address has had its answers for this interval
        (`LiveLooks.until_answerable`); a closed tab stops waiting."""
        wait = self.looks.until_answerable(keys)
        if wait <= 0:
            return
        gone = asyncio.ensure_future(_disconnected(request))
        self.looks.paced += 1
        try:
            while wait > 0 and not gone.done():
                await asyncio.wait({gone}, timeout=wait)
                wait = self.looks.until_answerable(keys)
        finally:
            self.looks.paced -= 1
            gone.cancel()

    def _too_many(self, request: Request) -> Response:
        """A look past the bound: answered at once; the page looks again after its interval."""
        wait = max(1, math.ceil(self.config.poll_interval_s))
        response = self._message(request, 429, "Too many live views",
                                 "This browser or address already holds as many live views open as it may: "
                                 f"this one refreshes every {wait} s instead.")
        response.headers["Retry-After"] = str(wait)
        response.headers[VERSION_HEADER] = self._service(request).changes.token
        return response

    async def list_live(self, request: Request, viewer: Viewer) -> Response:
        token = await self._hold(request)
        if token is None:
            return self._too_many(request)
        current = request.query_params.get("current", "")
        current = current if ID_RE.fullmatch(current) else ""
        state = self._state(request, viewer)

        async def render() -> bytes:
            context = await self._list(request, viewer, state, current)
            return self.render.text("_list_live.html", now=self.clock.now(), **context).encode()

        key = (state.params(), current, token, self._me(request, viewer))
        response = self.render.fragment_of(request, await self.looks.shared("list", key, render))
        response.headers[VERSION_HEADER] = token
        return response

    # one request --------------------------------------------------------------------------
    async def _load(self, request: Request) -> BridgeRequest | None:
        request_id = request.path_params["request_id"]
        if not ID_RE.fullmatch(request_id):
            return None
        return await self._service(request).get(request_id)

    async def _detail(self, request: Request, viewer: Viewer, found: BridgeRequest, *, status: int = 200,
                      errors: dict[str, str] | None = None, prior: dict[str, Any] | None = None,
                      notice: str = "", problem: str = "", state: ListState | None = None) -> Response:
        state = state or self._state(request, viewer)
        service = self._service(request)
        context = await self._list(request, viewer, state, current=found.id)
        shown = await request_view(service, found, self.clock.now(), self._me(request, viewer))
        next_url = ""
        if notice and not found.is_open:
            after = [row.r for row in context["rows"] if row.r.is_open and row.r.id != found.id]
            next_url = f"/inbox/r/{after[0].id}{state.suffix()}" if after else ""
        return self._page(request, "detail.html", status=status, viewer=viewer, errors=errors or {},
                          prior=prior or {}, notice=notice, problem=problem, next_url=next_url,
                          list_params=state.params(), **context, **shown)

    async def detail_page(self, request: Request, viewer: Viewer) -> Response:
        found = await self._load(request)
        if found is None:
            return self._message(request, 404, "Not found", "There is no such request.", viewer)
        notice = {"answered": "Your answer was recorded.", "voted": "Your vote was recorded.",
                  "retried": "The delivery was queued again."}.get(request.query_params.get("done", ""), "")
        return await self._detail(request, viewer, found, notice=notice)

    async def detail_live(self, request: Request, viewer: Viewer) -> Response:
        token = await self._hold(request)
        if token is None:
            return self._too_many(request)
        who = self._me(request, viewer)

        async def read() -> dict[str, Any] | None:
            found = await self._load(request)
            if found is None:
                return None
            return await request_view(self._service(request), found, self.clock.now(), who)

        shown = await self.looks.shared("detail", (request.path_params["request_id"], token, who), read)
        if shown is None:
            return self._message(request, 404, "Not found", "There is no such request.", viewer)
        csrf = self.auth.csrf_token(self._browser(request)[0])
        response = self.render.fragment(request, "_detail_live.html", csrf=csrf, **shown)
        response.headers[VERSION_HEADER] = token
        return response

    def _posted_state(self, request: Request) -> ListState:
        """The list a form was posted from (its hidden `list` field), to go back to it."""
        given = _first(request.state.form, "list") or ""
        return ListState.from_params(dict(parse_qsl(given[:1000])))

    async def _parsed(self, request: Request,
                      viewer: Viewer) -> tuple[BridgeRequest, ListState, ParsedAnswer] | Response:
        """What answering and checking both need: the request, where the person came from,
        and their answer read from the form; or the page that says why not (unknown, closed,
        answers to fix)."""
        found = await self._load(request)
        if found is None:
            return self._message(request, 404, "Not found", "There is no such request.", viewer)
        state = self._posted_state(request)
        parsed = parse_answer(found.questions, approving_form(found, request.state.form))
        if not found.is_open:
            return await self._detail(request, viewer, found, status=409, state=state,
                                      problem=views.closed_message(found))
        if not parsed.ok:
            return await self._detail(request, viewer, found, status=422, errors=parsed.errors, state=state,
                                      prior=parsed.prior, problem="Some answers need fixing (see below).")
        return found, state, parsed

    async def answer(self, request: Request, viewer: Viewer) -> Response:
        read = await self._parsed(request, viewer)
        if isinstance(read, Response):
            return read
        found, state, parsed = read
        responder = Responder(platform=viewer.platform, user_id=viewer.identity, name=viewer.display)
        service = self._service(request)
        grant = pressed_grant(service.grant_offers(found), request.state.form)
        if grant.problem:
            return await self._detail(request, viewer, found, status=422, prior=parsed.prior, state=state,
                                      problem=grant.problem)
        try:
            updated = await service.answer(found.id, responder, parsed.values, via="web", reason=parsed.reason,
                                           grant=grant.choice)
        except BridgeError as exc:
            current = await service.get(found.id) or found
            return await self._detail(request, viewer, current, status=exc.status, prior=parsed.prior,
                                      state=state, problem=str(exc))
        done = "voted" if updated.is_open else "answered"
        back = state.params()
        return redirect(f"/inbox/r/{found.id}?done={done}" + (f"&{back}" if back else ""))

    async def confirm(self, request: Request, viewer: Viewer) -> Response:
        """The check step (no JavaScript): show the answer as it will be sent; record nothing."""
        read = await self._parsed(request, viewer)
        if isinstance(read, Response):
            return read
        found, state, parsed = read
        if found.secret_question_ids:
            return self._message(request, 400, "Nothing to check",
                                 "Answers with a secret are sent directly: go back and send the form.", viewer)
        grant = pressed_grant(self._service(request).grant_offers(found), request.state.form)
        if grant.problem:
            return await self._detail(request, viewer, found, status=422, state=state, problem=grant.problem)
        return self._page(request, "confirm.html", viewer=viewer, r=found,
                          form_action=f"/inbox/r/{found.id}/answer",
                          back_url=f"/inbox/r/{found.id}{state.suffix()}",
                          **check_step(found, approving_form(found, request.state.form), parsed, grant.label))

    async def retry(self, request: Request, viewer: Viewer) -> Response:
        found = await self._load(request)
        if found is None:
            return self._message(request, 404, "Not found", "There is no such request.", viewer)
        try:
            await self._service(request).redeliver(found.id, actor=viewer.handle)
        except BridgeError as exc:
            current = await self._service(request).get(found.id) or found
            return await self._detail(request, viewer, current, status=exc.status, problem=str(exc))
        return redirect(f"/inbox/r/{found.id}?done=retried")

    # login --------------------------------------------------------------------------------
    @staticmethod
    def _next(value: str | None) -> str:
        """Only a local inbox path or an operator page: never an open redirect."""
        if value and re.fullmatch(r"/inbox(/[A-Za-z0-9_.:/-]*)?", value) and "//" not in value:
            return value
        if value in OPERATOR_PAGES:
            return value
        return "/inbox"

    async def insights_page(self, request: Request, viewer: Viewer) -> Response:
        """How requests end and how long deciding takes, per route and per person."""
        found = await gather(self._service(request).store)
        return self._page(request, "insights.html", viewer=viewer, **page_context(found))

    async def login_page(self, request: Request) -> Response:
        if await self.auth.viewer(request) is not None:
            return redirect(self._next(request.query_params.get("next")))
        return self._page(request, "login.html", next=self._next(request.query_params.get("next")),
                          error="", name="", accepts_password=self.auth.accepts_password)

    async def login(self, request: Request) -> Response:
        form = await self._form(request)
        if form is None:
            return self._message(request, 400, "Unreadable form", "The form could not be read.")
        field = {k: (v[0] if v else "") for k, v in form.items()}
        target = self._next(field.get("next"))
        name = field.get("name", "").strip()

        def refuse(status: int, error: str) -> Response:
            return self._page(request, "login.html", status=status, next=target, error=error,
                              name=name if re.fullmatch(NAME_PATTERN, name) else "",
                              accepts_password=self.auth.accepts_password)

        if not self.auth.csrf_ok(request, None, field.get("csrf")):
            return refuse(403, "This form is stale or did not come from this inbox. Try again.")
        if name and not re.fullmatch(NAME_PATTERN, name):
            return refuse(400, "Use 1-64 letters, digits, spaces or _.@- in your name.")
        secret = field.get("secret", "")
        if not secret or len(secret) > 1024:
            return refuse(401, "Enter the inbox password or your token.")
        client = request.client.host if request.client else "-"
        try:
            viewer = await self.auth.check_login(client, name, secret)
        except LoginRefused as exc:
            return refuse(exc.status, str(exc))
        response = redirect(target)
        cookie = await self.auth.new_session(viewer)
        response.delete_cookie(SESSION_COOKIE, path=COOKIE_PATH)  # one from before sessions moved to "/"
        response.set_cookie(SESSION_COOKIE, cookie, max_age=self.auth.ttl_s, path=SESSION_PATH, httponly=True,
                            samesite="strict", secure=is_secure(request))
        return response

    async def logout(self, request: Request) -> Response:
        form = await self._form(request)
        if not self.auth.csrf_ok(request, None, _first(form or {}, "csrf")):
            return self._message(request, 403, "Refused", "This form is stale. Reload the page and try again.")
        await self.auth.end_session(request.cookies.get(SESSION_COOKIE))  # a copied cookie dies too
        response = redirect("/inbox/login" if not self.auth.open else "/inbox")
        for path in (SESSION_PATH, COOKIE_PATH):
            response.delete_cookie(SESSION_COOKIE, path=path, httponly=True, samesite="strict")
        return response


def _first(form: dict[str, list[str]], name: str) -> str | None:
    values = form.get(name)
    return values[0] if values else None


def _session_key(request: Request) -> str:
    """Which login a look belongs to: its session cookie, else its bearer token, else its
    browser (an open inbox), else its address alone."""
    for given in (request.cookies.get(SESSION_COOKIE), request.headers.get("authorization"),
                  request.cookies.get(CSRF_COOKIE)):
        if given:
            return hashlib.sha256(given.encode()).hexdigest()
    return "-"


async def _disconnected(request: Request) -> None:
    """Return when the browser has gone (a GET has no body left to read: the next message is
    the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
