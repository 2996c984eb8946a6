"""A fake ntfy server on 127.0.0.1: records each JSON message published (checking the
access token and what the real server refuses: no topic, a bad priority, more than three
actions), answers `/v1/health`, and presses a message's `http` action the way the ntfy app
does: the action's method, headers and body, sent to its URL."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bridge.http.loopback import serving

TOPIC = re.compile(r"^[-_A-Za-z0-9]{1,64}$")


class FakeNtfy:
    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.port = 0
        self.messages: list[dict[str, Any]] = []
        self.refused: list[tuple[int, str]] = []
        self.fail_next: list[int] = []  # statuses to answer the next publishes with
        self.arrived = asyncio.Event()
        self._ids = itertools.count(1)
        self.app = Starlette(routes=[Route("/", self._publish, methods=["POST", "PUT"]),
                                     Route("/v1/health", self._health, methods=["GET"])])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _health(self, request: Request) -> JSONResponse:
        return JSONResponse({"healthy": True})

    def _refuse(self, status: int, why: str) -> JSONResponse:
        self.refused.append((status, why))
        return JSONResponse({"code": status * 100, "http": status, "error": why}, status_code=status)

    async def _publish(self, request: Request) -> JSONResponse:
        if self.token is not None and request.headers.get("authorization") != f"Bearer {self.token}":
            return self._refuse(403, "forbidden")
        if self.fail_next:
            return self._refuse(self.fail_next.pop(0), "injected")
        try:
            message = json.loads(await request.body())
        except ValueError:
            return self._refuse(400, "invalid request: request body must be message JSON")
        if not isinstance(message, dict) or not TOPIC.fullmatch(str(message.get("topic", ""))):
            return self._refuse(400, "invalid topic")
        if message.get("priority", 3) not in (1, 2, 3, 4, 5):
            return self._refuse(400, "invalid priority")
        if len(message.get("actions", [])) > 3:
            return self._refuse(400, "too many actions")
        stored = {"id": f"m{next(self._ids)}", **message}
        self.messages.append(stored)
        self.arrived.set()
        return JSONResponse({"id": stored["id"], "event": "message", "topic": message["topic"],
                             "sequence_id": message.get("sequence_id", stored["id"])})

    async def wait_for(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            self.arrived.clear()
            if len(self.messages) >= count:
                return self.messages
            if loop.time() > deadline:
                raise AssertionError(f"{len(self.messages)} messages, wanted {count}; refused {self.refused}")
            try:
                await asyncio.wait_for(self.arrived.wait(), deadline - loop.time())
            except TimeoutError:
                pass


async def press(message: dict[str, Any], label: str) -> httpx.Response:
    """Press the `http` action labelled `label`, as the ntfy app does."""
    action = next(a for a in message["actions"] if a["label"] == label)
    assert action["action"] == "http", action
    async with httpx.AsyncClient() as app:
        return await app.request(action.get("method", "POST"), action["url"], headers=action.get("headers", {}),
                                 content=action.get("body", ""))


@asynccontextmanager
async def ntfy_server(token: str | None = None) -> AsyncIterator[FakeNtfy]:
    fake = FakeNtfy(token)
    async with serving(fake.app, "fake ntfy") as port:
        fake.port = port
        yield fake
