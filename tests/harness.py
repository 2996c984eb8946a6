"""Test harness: a real daemon (real store, real uvicorn on 127.0.0.1:random port) and a
real callback receiver. Used by every integration test; nothing of ours is mocked."""

from __future__ import annotations

import asyncio
import copy
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bridge.config import Settings
from bridge.daemon import Daemon
from bridge.http.loopback import serving
from bridge.models import RequestState


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def make_settings(tmp_path: Path, config: dict[str, Any] | None = None) -> Settings:
    base: dict[str, Any] = {
        "store": {"url": f"sqlite:///{tmp_path}/bridge.db"},
        "http": {"listen": "127.0.0.1:0"},
        "sources": [{"type": "webhook"}],
        "web": {},
    }
    return Settings.model_validate(merge(base, config or {}))


class ManualClock:
    """A clock tests move by hand (no real waiting)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.current

    def advance(self, **kwargs: float) -> datetime:
        self.current += timedelta(**kwargs)
        return self.current


def refuse_request_updates(db: Path, on: bool) -> None:
    """Make a SQLite store fail for real, without touching our code: a trigger, put on by
    another connection, refuses every update of a request (`on=False` takes it off)."""
    with sqlite3.connect(db, timeout=10) as conn:
        conn.execute("DROP TRIGGER IF EXISTS refuse_updates")
        if on:
            conn.execute("CREATE TRIGGER refuse_updates BEFORE UPDATE ON requests "
                         "BEGIN SELECT RAISE(ABORT, 'disk quota exceeded (test)'); END")


@asynccontextmanager
async def running_bridge(
    tmp_path: Path, config: dict[str, Any] | None = None, *, clock: Any = None,
    settings: Settings | None = None,
) -> AsyncIterator[Daemon]:
    """Start a daemon on 127.0.0.1:<free port> with its store in tmp_path; stop it after."""
    daemon = Daemon(settings or make_settings(tmp_path, config), clock=clock)
    await daemon.start()
    try:
        yield daemon
    finally:
        await daemon.stop()


async def wait_for(predicate: Any, timeout: float = 10.0, interval: float = 0.01) -> Any:
    """Poll `predicate` (sync or async) until it returns something truthy, with a deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = predicate()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            raise TimeoutError(f"condition not met within {timeout}s")
        await asyncio.sleep(interval)


async def state_is(daemon: Daemon, request_id: str, state: RequestState) -> bool:
    """Whether the request is in `state` now (for `wait_for`: posting, for one, follows the 201)."""
    request = await daemon.service.get(request_id)
    return request is not None and request.state is state


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    at: float


@dataclass
class CallbackReceiver:
    """A real HTTP server on 127.0.0.1 that records callbacks; can answer 503 while 'down',
    or hold calls unanswered (`hold`) to catch the bridge with a delivery in flight."""

    received: list[Received] = field(default_factory=list)
    down: bool = False
    status: int = 200
    url: str = ""
    event: asyncio.Event = field(default_factory=asyncio.Event)
    refused: int = 0
    hold: asyncio.Event | None = None  # while set here, calls wait for it, then get a 503
    held: int = 0

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        if self.hold is not None:
            self.held += 1
            await self.hold.wait()
            return JSONResponse({"error": "too late"}, status_code=503)
        if self.down:
            self.refused += 1
            return JSONResponse({"error": "down"}, status_code=503)
        self.received.append(Received(dict(request.headers), body, asyncio.get_running_loop().time()))
        self.event.set()
        return Response(status_code=self.status)


@asynccontextmanager
async def callback_receiver() -> AsyncIterator[CallbackReceiver]:
    receiver = CallbackReceiver()
    app = Starlette(routes=[Route("/{path:path}", receiver.handle, methods=["POST"])])
    async with serving(app, "the callback receiver") as port:
        receiver.url = f"http://127.0.0.1:{port}/hook"
        yield receiver
