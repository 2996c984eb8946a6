"""Hot routes served right inside the bridge's own middleware (`RequestGuard`, `BodyLimit`),
past FastAPI's exception layer, exit stack and router: intake's `POST /v1/requests` spent a
tenth of its CPU crossing them.

A hot route is a `FirstRoute` whose app is an `Endpoint` (a handler from a starlette
`Request` to a `Response`). `FastLane` serves it when method and path match exactly; its
errors get the app's exception handlers (the same 401, 413, 422, 503 bodies), and any
other exception goes on to the server-error layer (500). The route stays in the router
too (served there when the app sits under a `root_path`), and the documented FastAPI
route beside it keeps the OpenAPI document whole.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from starlette._utils import is_async_callable  # how Starlette's own exception layer tells
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

Handle = Callable[[Request], Awaitable[Response]]


class Endpoint:
    """An ASGI app around `handle`: the request in, the response out, nothing else."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.handle(Request(scope, receive))
        await response(scope, receive, send)


class FastLane:
    """ASGI middleware: (method, path) of a hot route → its handler; anything else passes."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.lanes: dict[tuple[str, str], Handle] = {
            (method, route.path): route.app.handle
            for route in routes if isinstance(route, Route) and isinstance(route.app, Endpoint)
            and not route.param_convertors for method in route.methods or ()
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handle = self.lanes.get((scope.get("method", ""), scope.get("path", ""))) \
            if scope["type"] == "http" and not scope.get("root_path") else None
        if handle is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            response = await handle(request)
        except Exception as exc:
            handler = handler_for(scope["app"].exception_handlers, exc)
            if handler is None:
                raise  # the server-error layer answers 500
            response = await handler(request, exc) if is_async_callable(handler) \
                else await run_in_threadpool(handler, request, exc)
        await response(scope, receive, send)


def handler_for(handlers: Mapping[Any, Any], exc: Exception) -> Any:
    """The handler Starlette's exception layer would pick: by status code for an HTTP error,
    else the nearest class in the exception's MRO; None when there is none."""
    if isinstance(exc, HTTPException) and exc.status_code in handlers:
        return handlers[exc.status_code]
    for cls in type(exc).__mro__:
        if cls in handlers:
            return handlers[cls]
    return None
