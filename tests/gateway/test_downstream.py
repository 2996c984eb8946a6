"""Downstream servers misbehaving, and what the agent and the operator see: a Python SDK
server over Streamable HTTP (its key in the gateway's config, never the agent's), a server
that exits mid-call (restarted, reported, the call gets a clear error), one that never
answers, one that answers junk; sessions that never share a server process; tool names two
servers share; arguments too large to ask about."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn

from bridge.doctor import daemon_checks
from tests.gateway.conftest import OPS_TOKEN, agent, filesystem_server, gateway_config, node_servers
from tests.gateway.py_servers import http_app
from tests.harness import running_bridge, wait_for
from tests.mcp.conftest import free_port

SECRET = "s3cret-service-key-0123456789"
ALLOW_ALL = {"name": "all", "source": "tools", "effect": "allow"}


def py_server(name: str = "py", *args: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "command": sys.executable, "args": ["-m", "tests.gateway.py_servers", *args],
            "cwd": str(Path(__file__).parents[2]), **extra}


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


@asynccontextmanager
async def http_server(key: str) -> AsyncIterator[str]:
    """The SDK's server over Streamable HTTP on 127.0.0.1, behind a bearer key."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(http_app(key), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    serving = asyncio.create_task(server.serve())
    await wait_for(lambda: server.started, 20)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await serving


async def test_a_streamable_http_server_gets_its_key_and_the_agent_never_sees_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with http_server(SECRET) as url:
        served = {"name": "remote", "url": url, "headers": {"Authorization": f"Bearer {SECRET}"}}
        wrong = {"name": "wrongkey", "url": url, "headers": {"Authorization": "Bearer not-the-key-000"},
                 "prefix": True}
        config = gateway_config(served, extra={"policies": [ALLOW_ALL]})
        async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
            listing = await client.list_tools()
            assert "whoami" in [t.name for t in listing.tools]
            assert SECRET not in listing.model_dump_json()
            result = await client.call_tool("whoami", {})
            assert not result.is_error and _text(result).isdigit()
            stored = (await bridge.store.list_requests())[0]
            assert SECRET not in stored.model_dump_json()
        async with running_bridge(tmp_path / "2", gateway_config(wrong)) as bridge, agent(bridge) as client:
            with pytest.raises(Exception) as refused:
                await client.list_tools()
            assert "could not be started or reached" in str(refused.value) and "not-the-key" not in str(refused.value)
    assert SECRET not in caplog.text and "not-the-key-000" not in caplog.text


async def test_stdio_env_reaches_the_server_only(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    config = gateway_config(py_server(env={"SERVICE_KEY": SECRET}), extra={"policies": [ALLOW_ALL]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        listing = await client.list_tools()
        assert SECRET not in listing.model_dump_json()
        assert _text(await client.call_tool("has_key", {})) == "true"
        async with httpx.AsyncClient(base_url=bridge.base_url, headers={"Authorization": f"Bearer {OPS_TOKEN}"}) as h:
            assert SECRET not in (await h.get("/v1/requests")).text
            assert SECRET not in (await h.get("/readyz")).text
    assert SECRET not in caplog.text


async def test_a_server_that_exits_mid_call_is_restarted_and_reported(tmp_path: Path) -> None:
    config = gateway_config(py_server(), extra={"policies": [ALLOW_ALL]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        before = _text(await client.call_tool("whoami", {}))
        crashed = await client.call_tool("crash", {})
        assert crashed.is_error
        assert "exited during the call; it was restarted" in _text(crashed) and "call again" in _text(crashed)
        after = _text(await client.call_tool("whoami", {}))
        assert after.isdigit() and after != before  # a new process answers
        async with httpx.AsyncClient(base_url=bridge.base_url) as http:
            ready = await http.get("/readyz")
        assert "gateway:tools/py" in ready.text and "restarted" in ready.text
        found = {f.check: f for f in await daemon_checks(bridge.base_url, OPS_TOKEN)}  # what `doctor` prints
        assert found["daemon gateway:tools/py"].status == "warn"
        assert "restarted (1 time)" in found["daemon gateway:tools/py"].detail


async def test_a_server_that_exits_while_idle_is_restarted_before_the_next_call(tmp_path: Path) -> None:
    config = gateway_config(py_server(ping_every="100ms"), extra={"policies": [ALLOW_ALL]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        before = _text(await client.call_tool("whoami", {}))
        assert _text(await client.call_tool("exit_soon", {})) == "bye"

        async def restarted() -> bool:
            async with httpx.AsyncClient(base_url=bridge.base_url) as http:
                return "restarted (1 time)" in (await http.get("/readyz")).text
        await wait_for(restarted, 20)
        after = await client.call_tool("whoami", {})
        assert not after.is_error and _text(after) != before  # no call ever saw it gone


async def test_an_agent_cancelling_a_forwarded_call_cancels_it_downstream(tmp_path: Path) -> None:
    config = gateway_config(py_server(), extra={"policies": [ALLOW_ALL]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        async def waiting() -> list[int]:
            result = await client.call_tool("waiting", {})
            return [int(n) for n in _text(result).split(",")]

        with anyio.fail_after(60), anyio.CancelScope() as scope:
            async def cancel_once_started() -> None:
                try:
                    await wait_for(lambda: _started(waiting), 20)
                finally:
                    scope.cancel()
            canceller = asyncio.create_task(cancel_once_started())
            await client.call_tool("wait_for_cancel", {})
        await canceller
        assert await wait_for(lambda: _cancelled(waiting), 20)  # the server's handler was cancelled


async def _started(waiting: Any) -> bool:
    return bool((await waiting())[0] >= 1)


async def _cancelled(waiting: Any) -> bool:
    return bool((await waiting())[1] >= 1)


async def test_a_server_that_never_answers_times_out_with_a_clear_error(tmp_path: Path) -> None:
    config = gateway_config(py_server(call_timeout="1s"), extra={"policies": [ALLOW_ALL]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        result = await client.call_tool("hang", {})
        assert result.is_error and "did not answer within 1s" in _text(result)
        assert _text(await client.call_tool("count", {})).isdigit()  # the gateway goes on


async def test_a_server_answering_junk_is_a_clear_tool_error(tmp_path: Path) -> None:
    config = gateway_config(py_server("junk", "junk", call_timeout="5s"), extra={"policies": [ALLOW_ALL]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["junk"]
        result = await client.call_tool("junk", {})
        assert result.is_error and "not an MCP tool result" in _text(result)


async def test_sessions_never_share_a_server_process(tmp_path: Path) -> None:
    config = gateway_config(py_server(), extra={"policies": [ALLOW_ALL]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge, mode="legacy") as one, \
            agent(bridge, mode="legacy") as two:
        assert _text(await one.call_tool("count", {})) == "1"
        assert _text(await one.call_tool("count", {})) == "2"
        assert _text(await two.call_tool("count", {})) == "1"  # its own process: it never saw one's calls
        first = int(_text(await one.call_tool("whoami", {})))
        assert first != int(_text(await two.call_tool("whoami", {})))
    await wait_for(lambda: not _alive(first), 15)  # the session ended: its server process too


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_names_two_servers_share_stay_with_the_first_and_are_reported(tmp_path: Path) -> None:
    node_servers()
    files = tmp_path / "files"
    files.mkdir()
    config = gateway_config(filesystem_server(files), py_server(), extra={"policies": [ALLOW_ALL]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert names.count("read_file") == 1 and "whoami" in names
        (files / "a.txt").write_text("from fs")
        result = await client.call_tool("read_file", {"path": str(files / "a.txt")})
        assert "from fs" in _text(result)  # the first server's tool, never the other's
        async with httpx.AsyncClient(base_url=bridge.base_url) as http:
            ready = (await http.get("/readyz")).text
        assert "'py' also lists 'read_file'" in ready and "prefix" in ready


async def test_oversized_arguments_and_unknown_tools_are_refused_unasked(tmp_path: Path) -> None:
    config = gateway_config(py_server(), max_arguments_bytes=1024)
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        big = await client.call_tool("read_file", {"path": "x" * 5000})
        assert big.is_error and "max_arguments_bytes" in _text(big) and "Not asked, not called" in _text(big)
        unknown = await client.call_tool("rm_rf", {})
        assert unknown.is_error and "unknown tool 'rm_rf'" in _text(unknown)
        assert await bridge.store.list_requests() == []
