"""What a newcomer meets first over HTTP: the daemon's address opens the inbox, and a body over
the limit is refused with one JSON shape everywhere, naming the limit and its config key."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from bridge.http.stack import layers
from tests.harness import running_bridge

SHAPE = {"error": "body too large", "limit_bytes": 4096, "setting": "http.max_body_bytes",
         "detail": "body too large: the limit is 4096 bytes (http.max_body_bytes)"}


async def test_the_root_redirects_to_the_inbox(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        root = await client.get("/")
        assert root.status_code in (302, 303, 307) and root.headers["location"] == "/inbox"
        assert (await client.get("/", follow_redirects=True)).url.path.startswith("/inbox")


async def test_every_oversized_body_gets_one_json_shape_naming_the_limit(tmp_path: Path) -> None:
    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted while streaming
        for _ in range(10):
            yield b"x" * 1000

    async with running_bridge(tmp_path, {"http": {"max_body_bytes": 4096}}) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        big = b"x" * 10_000
        for path in ("/v1/requests", "/v1/requests/r_1/answer", "/inbox/r/r_1/answer", "/no/such/route"):
            declared = await client.post(path, content=big, headers={"content-type": "application/json"})
            assert (declared.status_code, declared.json()) == (413, SHAPE), (path, declared.text)
        for path in ("/v1/requests", "/v1/requests/r_1/answer"):
            streamed = await client.post(path, content=chunks(), headers={"content-type": "application/json"})
            assert (streamed.status_code, streamed.json()) == (413, SHAPE), (path, streamed.text)
        ok = await client.post("/v1/requests", json={"title": "Still serving?", "questions": [
            {"id": "ok", "kind": "confirm", "prompt": "Go?"}]})
        assert ok.status_code == 201, ok.text


async def test_a_body_longer_than_its_content_length_is_never_read_past_it(tmp_path: Path) -> None:
    """A declared length under the limit is not counted again (bridge.http.body_limit): the
    server reads exactly that many bytes, and what follows is taken as the next request."""
    async with running_bridge(tmp_path, {"http": {"max_body_bytes": 4096}}) as bridge:
        host, port = bridge.base_url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        then = b"GET /healthz HTTP/1.1\r\nHost: " + f"{host}:{port}".encode() + b"\r\n\r\n"
        writer.write(b"POST /v1/requests HTTP/1.1\r\nHost: " + f"{host}:{port}".encode() +
                     b"\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n" + b'{"title": "x"}' + then)
        await writer.drain()
        first = await reader.readuntil(b"\r\n\r\n")
        assert first.split(b" ")[1] == b"422", first  # the 14 bytes only: a request with no questions
        length = int(next(line for line in first.split(b"\r\n") if line.lower().startswith(b"content-length"))
                     .split(b":")[1])
        await reader.readexactly(length)
        second = await reader.readuntil(b"\r\n\r\n")
        assert second.split(b" ")[1] == b"200", second  # what followed is the next request
        writer.close()


async def test_the_stack_keeps_every_protection_and_drops_unused_layers(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge:
        app = bridge.app.build_middleware_stack()
        names = layers(app)
        assert names[0] == "ServerErrorMiddleware" and names[-1] == "APIRouter", names
        for kept in ("RequestGuard", "BodyLimit", "ExceptionMiddleware", "AsyncExitStackMiddleware"):
            assert kept in names, names
        assert "ExceptionTelemetryMiddleware" not in names and "AppBodyLimitMiddleware" not in names, names
        assert not bridge.app._native_telemetry.enabled()  # no global provider looked up per request
