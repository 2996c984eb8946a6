"""What a newcomer meets first over HTTP: the daemon's address opens the inbox, and a body over
the limit is refused with one JSON shape everywhere, naming the limit and its config key."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx

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
