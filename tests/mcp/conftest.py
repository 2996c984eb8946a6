"""MCP tests: the real `mcp` client library against `hitl-bridge mcp` (a subprocess, stdio)
and against `/mcp` in a real daemon (Streamable HTTP); people answer through the API, the
web inbox, the Slack fake and the Telegram fake."""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Implementation, Request, RequestParams, Result
from pydantic import ConfigDict

from bridge.daemon import Daemon
from tests.harness import merge, wait_for

AGENT_TOKEN = "agent-token-0123456789abcdef"
OPS_TOKEN = "ops-token-0123456789abcdefgh"
HITL_BRIDGE = str(Path(sys.executable).parent / "hitl-bridge")


def mcp_config(extra: dict[str, Any] | None = None, **mcp: Any) -> dict[str, Any]:
    """A daemon with the HTTP intake, `/mcp`, and two tokens: the agent's and an operator's."""
    base: dict[str, Any] = {
        "sources": [{"type": "webhook"}, {"type": "mcp", **mcp}],
        "http": {"api_tokens": {"agent": AGENT_TOKEN, "ops": OPS_TOKEN}},
    }
    return merge(base, extra or {})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def stdio_server(bridge: Daemon | str, *args: str, token: str | None = AGENT_TOKEN,
                 env: dict[str, str] | None = None, cwd: str | None = None) -> StdioServerParameters:
    """`hitl-bridge mcp` as an MCP client would start it (its own process, stdio)."""
    url = bridge if isinstance(bridge, str) else bridge.base_url
    flags = ["--url", url] if env is None else []
    if token is not None and env is None:
        flags += ["--token", token]
    return StdioServerParameters(command=HITL_BRIDGE, args=["mcp", *flags, *args], env=env, cwd=cwd)


@asynccontextmanager
async def over_stdio(bridge: Daemon | str, *args: str, mode: str = "auto",
                     extensions: list[ClientExtension] | None = None, name: str | None = None,
                     **kw: Any) -> AsyncIterator[Client]:
    info = Implementation(name=name, version="1.0") if name else None
    async with Client(stdio_server(bridge, *args, **kw), mode=mode, extensions=extensions,
                      client_info=info) as client:
        yield client


@asynccontextmanager
async def over_http(bridge: Daemon, token: str | None = AGENT_TOKEN, *, mode: str = "auto",
                    extensions: list[ClientExtension] | None = None,
                    headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(30, read=300)) as http, \
            Client(streamable_http_client(f"{bridge.base_url}/mcp", http_client=http), mode=mode,
                   extensions=extensions) as client:
        yield client


async def open_requests(bridge: Daemon | str) -> list[dict[str, Any]]:
    base = bridge if isinstance(bridge, str) else bridge.base_url
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {OPS_TOKEN}"}) as http:
        response = await http.get("/v1/requests", params={"state": "posted"})
        found: list[dict[str, Any]] = response.json()["requests"]
        return found


async def next_request(bridge: Daemon | str) -> dict[str, Any]:
    """The one request waiting for a person (waits for it to be posted)."""
    found = await wait_for(lambda: open_requests(bridge), 15)
    assert len(found) == 1, [r["title"] for r in found]
    request: dict[str, Any] = found[0]
    return request


async def answer(bridge: Daemon | str, request_id: str, body: dict[str, Any],
                 token: str = OPS_TOKEN) -> httpx.Response:
    """A person answering through the API (as the operator's token, unless told)."""
    base = bridge if isinstance(bridge, str) else bridge.base_url
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as http:
        return await http.post(f"/v1/requests/{request_id}/answer", json=body)


async def stored(bridge: Daemon, request_id: str) -> Any:
    request = await bridge.store.get_request(request_id)
    assert request is not None
    return request


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert block.type == "text"
    return block.text


# -- a client side of the tasks extension (the SDK's claim hooks; the SDK ships no tasks client) --

TASKS = "io.modelcontextprotocol/tasks"


class TaskRef(RequestParams):
    task_id: str


class GetTask(Request[TaskRef, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskRef


class CancelTask(Request[TaskRef, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskRef


class CreatedTask(Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str


class TaskState(Result):
    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    status_message: str | None = None
    result: dict[str, Any] | None = None


class TasksClient(ClientExtension):
    """Declares the tasks extension; resolves a task by polling `tasks/get`. `created` holds
    each task as the server first returned it."""

    identifier = TASKS

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []
        self.polls = 0

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, created: CreatedTask, ctx: ClaimContext) -> CallToolResult:
        self.created.append(created)
        while True:
            state = await ctx.session.send_request(GetTask(params=TaskRef(task_id=created.task_id)), TaskState)
            self.polls += 1
            if state.status == "completed":
                assert state.result is not None
                return CallToolResult.model_validate(state.result)
            if state.status != "working":
                raise RuntimeError(f"task {state.task_id} {state.status}: {state.status_message}")
            await anyio.sleep(0.02)
