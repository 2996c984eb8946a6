"""`GET /v1/requests/{id}?wait=S` served lean: a parked long poll holds as little as it can.

Thousands of clients may park a long poll at once (MCP tool calls, the clients' `ask()`);
each holds its connection and its handler's frames until its request changes. FastAPI's
request machinery (dependency solving, validation, exit stacks) keeps ~10 KB per request
alive for the whole wait, so the waiting form of the route is a bare ASGI endpoint put
before the FastAPI route (which stays the documented one, and serves every other form:
no `wait`, `wait=0`, or a `wait` FastAPI must refuse with its 422). It checks the same
token (`require_api_token`), waits on the change feed (`BridgeService.wait_closed`), and
answers the same body (`api.request_detail`); errors go through the app's handlers.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl

from fastapi import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Receive, Scope, Send

from bridge.http import api
from bridge.http.auth import require_api_token

PATH = "/v1/requests/{request_id}"
PLAIN_NUMBER = re.compile(r"[0-9]{1,6}(\.[0-9]{0,6})?")  # anything else is FastAPI's to accept or refuse


class LongPoll:
    """The ASGI endpoint; anything but a long poll goes on to the routes after it."""

    def __init__(self, routes: list[BaseRoute]) -> None:
        self.routes = routes  # the app's route list, this endpoint's own route in it

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        wait = wait_of(scope)
        if wait is None:
            await self._pass_on(scope, receive, send)
            return
        request = Request(scope, receive)
        await require_api_token(request)
        service = api.service_of(request)
        request_id: str = scope["path_params"]["request_id"]
        await api.check_may_wait(request, request_id)
        del request  # nothing of the HTTP request is kept while parked
        found = await service.wait_closed(request_id, wait)
        if found is None:
            raise HTTPException(404, f"no request {request_id!r}")
        await JSONResponse(await api.request_detail(service, found))(scope, receive, send)

    async def _pass_on(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route as the router would have without this endpoint (the FastAPI route)."""
        seen_self = False
        partial: tuple[BaseRoute, Scope] | None = None
        for route in self.routes:
            if not seen_self:
                seen_self = isinstance(route, Route) and route.endpoint is self
                continue
            match, child = route.matches(scope)
            if match is Match.FULL:
                scope.update(child)
                await route.handle(scope, receive, send)
                return
            if match is Match.PARTIAL and partial is None:
                partial = route, child
        if partial is None:
            raise HTTPException(404)
        scope.update(partial[1])  # the path matches, the method does not: that route's 405
        await partial[0].handle(scope, receive, send)


def wait_of(scope: Scope) -> float | None:
    """The `wait` of a long poll (a GET, 0 < wait <= MAX_WAIT_S, given once), else None."""
    if scope.get("method") != "GET":  # HEAD (which Starlette adds to every GET route) is FastAPI's to refuse
        return None
    values = [v for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
              if k == "wait"]
    if len(values) != 1 or not PLAIN_NUMBER.fullmatch(values[0]):
        return None
    wait = float(values[0])
    return wait if 0 < wait <= api.MAX_WAIT_S else None


def install(routes: list[BaseRoute]) -> None:
    """Put the lean endpoint just before the route that serves GET /v1/requests/{id}."""
    probe: Scope = {"type": "http", "path": "/v1/requests/probe", "method": "GET", "root_path": "",
                    "query_string": b"", "headers": []}
    for index, route in enumerate(routes):
        if route.matches(dict(probe))[0] is Match.FULL:
            routes.insert(index, Route(PATH, LongPoll(routes), methods=["GET"], include_in_schema=False))
            return
    raise RuntimeError(f"no route serves GET {PATH}: nothing to put the long poll before")
