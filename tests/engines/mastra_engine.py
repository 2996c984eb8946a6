"""Driving the real Mastra test server from tests, and a fault-injecting proxy in front of it.

`MastraEngine` starts runs, reads and resumes them the way another Mastra client would
("elsewhere"), and deletes every run after a test so the next one starts clean. The bridge
talks to `engine.url`: a `FakeServer` (tests/engines/harness.py) that records each call,
can be slow, answer garbage or errors, be taken down, and run a hook before passing a
request on (which may act on the engine first, or answer in its place) — while everything
it passes on reaches the real Mastra server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from starlette.types import Receive, Scope, Send

from tests.engines.harness import FakeServer

WORKFLOWS = ("deploy", "rollout", "freeform", "parallel", "nested", "loop")
# (method, path, query) → None to pass the request on, or (status, body) to answer instead
# (a body of bytes is sent as it is, anything else as JSON)
Hook = Callable[[str, str, str], Awaitable[tuple[int, Any] | None]]


class ForwardingApp:
    """ASGI app passing each request on to `upstream` unchanged and its reply back."""

    def __init__(self, upstream: str) -> None:
        self.client = httpx.AsyncClient(base_url=upstream, timeout=60)
        self.before: Hook | None = None
        self.late_replies = 0  # the next N POSTs reach the engine, but their replies come late
        self.late_by = 1.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        query = scope["query_string"].decode()
        instead = await self.before(scope["method"], scope["path"], query) if self.before is not None else None
        if instead is not None:
            status, content = instead
            if isinstance(content, bytes):
                await _reply(send, status, content, "text/html")
            else:
                await _reply(send, status, json.dumps(content).encode())
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]
                   if k.lower() in (b"content-type", b"authorization")}
        reply = await self.client.request(scope["method"], scope["path"] + (f"?{query}" if query else ""),
                                          content=body, headers=headers)
        if scope["method"] == "POST" and self.late_replies > 0:
            self.late_replies -= 1
            await asyncio.sleep(self.late_by)  # the engine has it; the caller hears nothing in time
        await _reply(send, reply.status_code, reply.content, reply.headers.get("content-type", "application/json"))


async def _reply(send: Send, status: int, body: bytes, content_type: str = "application/json") -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class MastraEngine:
    """The real Mastra server (`direct`) and the proxy the bridge is pointed at (`server`)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.direct = httpx.AsyncClient(base_url=upstream, timeout=30)
        self.forward = ForwardingApp(upstream)
        self.server = FakeServer(self.forward, error_body={"error": "Internal Server Error"})

    @property
    def url(self) -> str:
        return self.server.url

    async def start(self, workflow: str, input_data: dict[str, Any] | None = None) -> str:
        """Start a run and wait until it suspends (or ends); its runId."""
        reply = await self.direct.post(f"/api/workflows/{workflow}/start-async", json={"inputData": input_data or {}})
        assert reply.status_code == 200, reply.text
        result = reply.json()
        assert result["status"] == "suspended", result
        return str(result["runId"])

    async def run(self, workflow: str, run_id: str) -> dict[str, Any]:
        reply = await self.direct.get(f"/api/workflows/{workflow}/runs/{run_id}")
        assert reply.status_code == 200, reply.text
        found: dict[str, Any] = reply.json()
        return found

    async def resume(self, workflow: str, run_id: str, step: str | list[str], data: Any) -> dict[str, Any]:
        """Resume from another client (Mastra's playground, a script)."""
        reply = await self.direct.post(f"/api/workflows/{workflow}/resume-async", params={"runId": run_id},
                                       json={"step": step, "resumeData": data})
        assert reply.status_code == 200, reply.text
        result: dict[str, Any] = reply.json()
        return result

    async def status(self, workflow: str, run_id: str) -> str:
        return str((await self.run(workflow, run_id))["status"])

    def resumes(self, run_id: str) -> list[Any]:
        """The bridge's resume calls for one run (bodies as sent)."""
        return [c.json() for c in self.server.calls_to("POST", "/resume") if f"runId={run_id}" in c.query]

    @staticmethod
    async def clear_with(direct: httpx.AsyncClient) -> None:
        """Delete every run, so the next test sees an empty engine."""
        for workflow in WORKFLOWS:
            listed = await direct.get(f"/api/workflows/{workflow}/runs", params={"perPage": 1000})
            for run in listed.json().get("runs", []):
                await direct.delete(f"/api/workflows/{workflow}/runs/{run['runId']}")

    async def close(self) -> None:
        await self.server.stop()
        await self.forward.client.aclose()
        await self.direct.aclose()
