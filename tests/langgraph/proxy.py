"""A fault-injecting reverse proxy in front of the real LangGraph server (127.0.0.1 only).

Modes: `ok` (pass through), `down` (503), `garbage` (200 with a body that is not the API's),
`slow` (hold every request for `delay_s`, then pass it on), `slow_resume` (the same for
resume calls only: the run starts upstream but the reply comes too late), `fail_resume`
(HTTP 500 for resume calls only, the rest passes). `calls` records (method, path) of every request it saw.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bridge.http.loopback import serving


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.mode = "ok"
        self.delay_s = 3.0
        self.url = ""
        self.calls: list[tuple[str, str]] = []
        self.api_keys: list[str | None] = []
        self._client = httpx.AsyncClient(base_url=upstream, timeout=30)

    def resume_calls(self) -> int:
        return sum(1 for m, p in self.calls if m == "POST" and p.endswith("/runs"))

    async def handle(self, request: Request) -> Response:
        path = request.url.path
        self.calls.append((request.method, path))
        self.api_keys.append(request.headers.get("x-api-key"))
        mode = self.mode
        is_resume = request.method == "POST" and path.endswith("/runs")
        if mode == "down":
            return JSONResponse({"detail": "service unavailable"}, status_code=503)
        if mode == "garbage":
            return Response(b"<html>definitely not json", status_code=200, media_type="text/html")
        if mode == "garbage_json":
            return JSONResponse({"unexpected": "shape"})
        if mode == "fail_resume" and is_resume:
            return Response(b"Internal Server Error", status_code=500)
        body = await request.body()
        if mode == "slow" or (mode == "slow_resume" and is_resume):
            await asyncio.sleep(self.delay_s)  # the simulated engine is slow, the test is not
        upstream = await self._client.request(
            request.method, path, params=request.query_params, content=body,
            headers={"content-type": request.headers.get("content-type", "application/json")},
        )
        return Response(upstream.content, status_code=upstream.status_code,
                         media_type=upstream.headers.get("content-type"))


@asynccontextmanager
async def fault_proxy(upstream: str) -> AsyncIterator[FaultProxy]:
    proxy = FaultProxy(upstream)
    app = Starlette(routes=[Route("/{path:path}", proxy.handle,
                                  methods=["GET", "POST", "PUT", "PATCH", "DELETE"])])
    try:
        async with serving(app, "the fault proxy", access_log=False) as port:
            proxy.url = f"http://127.0.0.1:{port}"
            yield proxy
    finally:
        await proxy._client.aclose()
