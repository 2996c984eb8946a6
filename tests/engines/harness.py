"""Run a fake engine (an ASGI app) on 127.0.0.1 with a random port, and break it on demand.

`FakeServer` serves the app with uvicorn inside the test's event loop. `Faults` makes
every reply slow, garbage (200 with an HTML body) or an error (the engine's own error
reply), and `stop()`/`start()` take the engine down and bring it back on the same port.
Every request is recorded in `calls` so tests can assert what the bridge sent.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send


@dataclass
class Call:
    """One request the fake received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Faults:
    """What the fake does to every request (`mode`: ok, slow, garbage, error)."""

    mode: str = "ok"
    delay: float = 0.0
    error_status: int = 500
    error_body: Any = field(default_factory=lambda: {"error": "Internal Server Error"})
    raw_body: bytes | None = None  # sent as is instead of error_body (e.g. JSON too deep to encode)
    only_methods: tuple[str, ...] = ()  # empty: every method
    remaining: int | None = None  # None: until changed; N: the next N matching requests

    def applies(self, method: str) -> bool:
        if self.mode == "ok":
            return False
        if self.only_methods and method not in self.only_methods:
            return False
        if self.remaining is not None:
            if self.remaining <= 0:
                return False
            self.remaining -= 1
        return True


class FaultInjector:
    """ASGI middleware: records each call, then applies `faults` before the app sees it."""

    def __init__(self, app: ASGIApp, faults: Faults, calls: list[Call]) -> None:
        self.app = app
        self.faults = faults
        self.calls = calls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.calls.append(Call(scope["method"], scope["path"], scope["query_string"].decode(), headers, body))
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        faults = self.faults
        if faults.applies(scope["method"]):
            if faults.mode == "slow":
                await asyncio.sleep(faults.delay)
            elif faults.mode == "garbage":
                await _reply(send, 200, b"<html><body>502 Bad Gateway?</body></html>", "text/html")
                return
            elif faults.mode == "error":
                payload = faults.raw_body if faults.raw_body is not None else json.dumps(faults.error_body).encode()
                await _reply(send, faults.error_status, payload, "application/json")
                return
        await self.app(scope, replay, send)


async def _reply(send: Send, status: int, body: bytes, content_type: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class FakeServer:
    """A fake engine served on 127.0.0.1; `url` is its base URL once started."""

    def __init__(self, app: ASGIApp, error_body: dict[str, Any] | None = None) -> None:
        self.calls: list[Call] = []
        self.faults = Faults(error_body=error_body or {"error": "Internal Server Error"})
        self._app = FaultInjector(app, self.faults, self.calls)
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_faults(self, mode: str = "ok", **kwargs: Any) -> None:
        """Switch fault mode in place (the middleware keeps the same object)."""
        self.faults.mode = mode
        self.faults.delay = kwargs.get("delay", 0.0)
        self.faults.only_methods = tuple(kwargs.get("only_methods", ()))
        self.faults.remaining = kwargs.get("remaining")
        if "error_status" in kwargs:
            self.faults.error_status = kwargs["error_status"]

    async def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms Nagle/delayed-ACK stalls
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self._app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        await wait_for(lambda: self._server is not None and self._server.started, what="fake engine start")

    async def stop(self) -> None:
        """Take the engine down: new connections are refused until `start()`."""
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        await self._task
        self._server = None
        self._task = None

    def calls_to(self, method: str, path_contains: str) -> list[Call]:
        return [c for c in self.calls if c.method == method and path_contains in c.path]


async def wait_for(
    condition: Callable[[], bool | Awaitable[bool]], *, within: float = 10.0, what: str = "condition"
) -> None:
    """Poll `condition` every 20 ms until it holds; fail the test after `within` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
