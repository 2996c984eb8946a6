"""The fast lane (bridge.http.fast_lane): intake is served inside the app's guards, and its
errors get the app's own handlers: the same status codes and bodies as any route."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from starlette.exceptions import HTTPException

from bridge.http.fast_lane import handler_for
from bridge.store.base import StoreError, StoreFull
from tests.harness import running_bridge

TOKEN = "t" * 32
BODY = {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}]}


def test_the_handler_is_the_one_starlette_would_pick() -> None:
    handlers = {HTTPException: "http", 413: "too large", StoreError: "store", Exception: "any"}
    assert handler_for(handlers, HTTPException(413)) == "too large"
    assert handler_for(handlers, HTTPException(401)) == "http"
    assert handler_for(handlers, StoreFull("full")) == "store"
    assert handler_for({HTTPException: "http"}, ValueError("bug")) is None


async def chunks(size: int) -> AsyncIterator[bytes]:
    yield b'{"title": "' + b"x" * size + b'"}'


async def test_intake_errors_are_answered_as_by_any_route(tmp_path: Path) -> None:
    config = {"http": {"api_tokens": [TOKEN], "max_body_bytes": 4096}}
    async with running_bridge(tmp_path, config) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        auth = {"authorization": f"Bearer {TOKEN}"}
        missing = await client.post("/v1/requests", json=BODY)
        assert missing.status_code == 401 and "detail" in missing.json()
        streamed = await client.post("/v1/requests", content=chunks(8192),
                                     headers={**auth, "content-type": "application/json"})
        assert streamed.status_code == 413
        assert streamed.json() == {"error": "body too large", "limit_bytes": 4096, "setting": "http.max_body_bytes",
                                   "detail": "body too large: the limit is 4096 bytes (http.max_body_bytes)"}
        broken = await client.post("/v1/requests", content=b"{", headers={**auth, "content-type": "application/json"})
        assert broken.status_code == 422 and broken.json() == {"detail": "the body is not valid JSON (UTF-8)"}
        cross = await client.post("/v1/requests", json=BODY, headers={**auth, "origin": "https://evil.example"})
        assert cross.status_code == 403
        created = await client.post("/v1/requests", json=BODY, headers=auth)
        assert created.status_code == 201
        await bridge.store.close()  # the store gone: a fault, answered 503 by the app's handler
        gone = await client.post("/v1/requests", json=BODY, headers=auth)
        assert gone.status_code == 503 and gone.headers["retry-after"] == "30"
