"""What keeps a rule-allowed call cheap keeps it safe: the decision is on record before the
call goes downstream, and a store that cannot record it stops the call (a real SQLite
trigger refuses the write: nothing of ours is mocked); an HTTP server's connection is
reused across calls (and a stream that does not end is still let go); results pass through
as the server sent them; a slow or dead server is a clear error."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from bridge.daemon import Daemon
from bridge.models import OPEN_STATES
from bridge.models import Request as BridgeRequest
from tests.gateway.conftest import agent, answer, gateway_config
from tests.gateway.py_servers import WAITING, build
from tests.gateway.test_downstream import ALLOW_ALL, _text, py_server
from tests.harness import running_bridge, wait_for
from tests.mcp.conftest import free_port

REFUSE_ANSWERS = """CREATE TRIGGER refuse_answers BEFORE UPDATE OF state ON requests
                    WHEN NEW.state = 'answered' BEGIN SELECT RAISE(ABORT, 'injected: the disk says no'); END"""
REFUSE_REQUESTS = """CREATE TRIGGER refuse_requests BEFORE INSERT ON requests
                     BEGIN SELECT RAISE(ABORT, 'injected: the disk says no'); END"""


def sql(bridge: Daemon, statement: str) -> None:
    """Run `statement` on the daemon's database file, from outside (as another process would)."""
    url = bridge.settings.store.url
    with sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None, timeout=30) as db:
        db.execute(statement)


async def _with(kinds: Any, kind: str) -> list[str] | None:
    found: list[str] = await kinds
    return found if kind in found else None


async def open_requests(bridge: Daemon) -> list[BridgeRequest]:
    return [r for r in await bridge.store.list_requests() if r.state in OPEN_STATES]


async def test_an_automatic_answer_the_store_refuses_never_lets_the_call_through(tmp_path: Path) -> None:
    config = gateway_config(py_server(), extra={"policies": [ALLOW_ALL]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        sql(bridge, REFUSE_ANSWERS)
        call = asyncio.create_task(client.call_tool("count", {}))
        waiting = await wait_for(lambda: open_requests(bridge), 20)

        async def kinds() -> list[str]:
            return [e.kind for e in await bridge.store.list_events(waiting[0].id)]
        events = await wait_for(lambda: _with(kinds(), "policy_error"), 20)
        assert "answered" not in events  # on record: the rule could not answer
        assert not call.done()  # held for a person, not forwarded
        sql(bridge, "DROP TRIGGER refuse_answers")
        assert (await answer(bridge, waiting[0].id, {"approve": "yes"})).is_success  # a person allows it
        result = await asyncio.wait_for(call, 30)
        assert not result.is_error and _text(result) == "1"  # the server's first call: never forwarded before


async def test_a_request_the_store_cannot_keep_is_not_called(tmp_path: Path) -> None:
    config = gateway_config(py_server(), extra={"policies": [ALLOW_ALL]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        await client.list_tools()
        sql(bridge, REFUSE_REQUESTS)
        refused = await client.call_tool("count", {})
        assert refused.is_error and "Not called: the bridge could not record the call" in _text(refused)
        sql(bridge, "DROP TRIGGER refuse_requests")
        after = await client.call_tool("count", {})
        assert not after.is_error and _text(after) == "1"
        [stored] = await bridge.store.list_requests()
        kinds = [e.kind for e in await bridge.store.list_events(stored.id)]
        assert kinds[:2] == ["created", "answered"]  # each allowed call: its rule's answer on record
        answered = next(e for e in await bridge.store.list_events(stored.id) if e.kind == "answered")
        assert answered.data["decided_by"]["rule"] == "all"


class Connections:
    """ASGI middleware noting the client port of each POST (which TCP connection carried it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.ports: list[int] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            self.ports.append(scope["client"][1])
        await self.app(scope, receive, send)


@asynccontextmanager
async def served(app: ASGIApp, port: int | None = None) -> AsyncIterator[str]:
    """`app` on 127.0.0.1 (on `port` when given), until the block ends."""
    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve())
    await wait_for(lambda: server.started, 20)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await serving


async def test_calls_to_an_http_server_reuse_one_connection(tmp_path: Path) -> None:
    server: MCPServer = build("py-http")
    app = Connections(server.streamable_http_app())
    async with served(app) as base:
        config = gateway_config({"name": "remote", "url": f"{base}/mcp"}, extra={"policies": [ALLOW_ALL]})
        async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
            await client.list_tools()
            results = [await client.call_tool("count", {}) for _ in range(5)]
            assert [_text(r) for r in results] == ["1", "2", "3", "4", "5"]
    assert len(app.ports) >= 5 and len(set(app.ports[-5:])) == 1, app.ports  # one connection for the five calls


async def test_a_result_passes_through_as_the_server_sent_it(tmp_path: Path) -> None:
    server = MCPServer("structured")

    @server.tool()
    def point() -> dict[str, Any]:
        """A structured result."""
        return {"x": 1, "y": 2}

    async with served(server.streamable_http_app()) as base:
        config = gateway_config({"name": "s", "url": f"{base}/mcp"}, extra={"policies": [ALLOW_ALL]})
        async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
            await client.list_tools()
            result = await client.call_tool("point", {})
            assert not result.is_error and result.structured_content == {"x": 1, "y": 2}


async def test_an_http_server_that_is_slow_or_gone_is_a_clear_error(tmp_path: Path) -> None:
    port = free_port()
    config = gateway_config({"name": "remote", "url": f"http://127.0.0.1:{port}/mcp", "call_timeout": "1s"},
                            extra={"policies": [ALLOW_ALL]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        async with served(build("py-http").streamable_http_app(), port):
            assert _text(await client.call_tool("count", {})).isdigit()
            slow = await client.call_tool("hang", {})
            assert slow.is_error and "did not answer within 1s" in _text(slow)
            assert not (await client.call_tool("count", {})).is_error  # its connection still serves
        gone = await asyncio.wait_for(client.call_tool("count", {}), 30)  # its pooled connection is dead now
        assert gone.is_error and "'remote'" in _text(gone)


async def test_an_agent_cancelling_a_call_to_an_http_server_cancels_it_there(tmp_path: Path) -> None:
    before = list(WAITING)
    async with served(build("py-http").streamable_http_app()) as base:
        config = gateway_config({"name": "remote", "url": f"{base}/mcp"}, extra={"policies": [ALLOW_ALL]})
        async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
            with anyio.fail_after(60), anyio.CancelScope() as scope:
                async def cancel_once_started() -> None:
                    try:
                        await wait_for(lambda: WAITING[0] > before[0], 20)
                    finally:
                        scope.cancel()
                canceller = asyncio.create_task(cancel_once_started())
                await client.call_tool("wait_for_cancel", {})
            await canceller
            await wait_for(lambda: WAITING[1] > before[1], 20)  # the server's handler was cancelled
            assert _text(await client.call_tool("count", {})).isdigit()  # and the connection serves on
