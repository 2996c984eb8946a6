"""The HTTP under the gateway's client for a Streamable HTTP server (`adapters.gateway.keepalive`),
against a real server on 127.0.0.1: a stream closed just before its end keeps its
connection; one that never ends, or floods, is let go; headers and bodies pass unchanged
(an encoded body decoded once); redirects are not followed; failures are httpx2's."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from adapters.gateway.keepalive import DRAIN_AT_MOST, KeepAlive
from tests.gateway.test_fast_path import served
from tests.mcp.conftest import free_port


async def forever(request: Request) -> Response:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"first\n"
        while True:
            await asyncio.sleep(0.01)
            yield b"more\n"
    return StreamingResponse(chunks(), media_type="text/event-stream")


async def flood(request: Request) -> Response:
    async def chunks() -> AsyncIterator[bytes]:
        while True:
            yield b"x" * 65536
            await asyncio.sleep(0)  # this server shares the test's loop
    return StreamingResponse(chunks(), media_type="text/event-stream")


async def short(request: Request) -> Response:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"first\n"
        yield b"last\n"
    return StreamingResponse(chunks(), media_type="text/event-stream")


async def peer(request: Request) -> Response:
    client = request.client
    return PlainTextResponse(str(client.port if client else 0))


async def echo(request: Request) -> Response:
    body = await request.body()
    seen = f"{request.method} {request.url.path}?{request.url.query} {request.headers.get('x-key')} " \
           f"{request.headers.get('host')} {body.decode()}"
    return PlainTextResponse(seen)


async def zipped(request: Request) -> Response:
    return Response(gzip.compress(b"unzipped once"), headers={"content-encoding": "gzip"})


async def slow(request: Request) -> Response:
    await request.app.state.released.wait()  # answers only when the test is over
    return PlainTextResponse("late")


async def moved(request: Request) -> Response:
    return RedirectResponse("http://elsewhere.example/", status_code=307)


APP = Starlette(routes=[Route(f"/{f.__name__}", f, methods=["POST"]) for f in (forever, flood, short, peer, echo,
                                                                            zipped, slow, moved)])


@pytest.fixture
async def base() -> AsyncIterator[str]:
    APP.state.released = asyncio.Event()
    async with served(APP) as url:
        try:
            yield url
        finally:
            APP.state.released.set()  # the slow answer goes out: the server can stop


async def closed_early(http: httpx2.AsyncClient, url: str) -> None:
    async with http.stream("POST", url) as response:
        async for _ in response.aiter_bytes():
            break  # closed before its end, as the SDK closes a call's stream


async def test_a_stream_closed_just_before_its_end_keeps_its_connection(base: str) -> None:
    async with httpx2.AsyncClient(transport=KeepAlive()) as http:
        first = (await http.post(f"{base}/peer")).text
        await closed_early(http, f"{base}/short")
        assert (await http.post(f"{base}/peer")).text == first


@pytest.mark.parametrize("endless", ["forever", "flood"])
async def test_a_stream_that_does_not_end_is_let_go(base: str, endless: str) -> None:
    async with httpx2.AsyncClient(transport=KeepAlive()) as http:
        first = (await http.post(f"{base}/peer")).text
        await asyncio.wait_for(closed_early(http, f"{base}/{endless}"), 10)  # not read forever
        assert (await http.post(f"{base}/peer")).text != first  # that connection was closed
    assert DRAIN_AT_MOST < 10 * 65536


async def test_requests_and_bodies_pass_unchanged(base: str) -> None:
    async with httpx2.AsyncClient(transport=KeepAlive(), headers={"X-Key": "k1"}) as http:
        seen = await http.post(f"{base}/echo", params={"q": "a b/ü"}, json={"text": "hé"})
        assert seen.text == f'POST /echo?q=a+b%2F%C3%BC k1 {base.removeprefix("http://")} {{"text":"hé"}}'
        assert (await http.post(f"{base}/zipped")).text == "unzipped once"
        redirect = await http.post(f"{base}/moved")
        assert redirect.status_code == 307 and redirect.headers["location"] == "http://elsewhere.example/"


async def test_failures_are_httpx_errors(base: str) -> None:
    async with httpx2.AsyncClient(transport=KeepAlive(), timeout=httpx2.Timeout(5, read=0.2)) as http:
        with pytest.raises(httpx2.ReadTimeout):
            await http.post(f"{base}/slow")
        with pytest.raises(httpx2.ConnectError):
            await http.post(f"http://127.0.0.1:{free_port()}/nobody")
        assert (await http.post(f"{base}/peer")).text.isdigit()  # the pool goes on
