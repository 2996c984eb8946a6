"""`hitl-bridge mcp` (its own process, stdio) waiting for people: timeouts, a cancelled call
or a closed client, SIGTERM, a daemon restart mid-wait, a bridge gone for good, holds and
await_answer, progress notifications, and the tasks extension."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
from pathlib import Path
from typing import Any

import anyio
import pytest

from bridge.models import RequestState
from tests.harness import running_bridge, wait_for
from tests.mcp.conftest import (
    AGENT_TOKEN,
    HITL_BRIDGE,
    TasksClient,
    answer,
    free_port,
    mcp_config,
    next_request,
    over_stdio,
    stored,
    text,
)


async def test_nobody_answering_in_time_is_said_clearly(tmp_path: Path) -> None:
    config = mcp_config({"routes": [
        {"name": "auto-no", "match": {"tool": "deploy"}, "timeout": "300ms", "on_timeout": {"answer": "no"}},
        {"name": "expire", "match": {"engine": "mcp"}, "timeout": "300ms", "on_timeout": {"fail": True}}]})
    async with running_bridge(tmp_path, config) as bridge, over_stdio(bridge) as client:
        with anyio.fail_after(20):
            result = await client.call_tool("request_approval", {"tool_name": "deploy", "arguments": {"v": 1}})
        assert result.structured_content is not None and result.structured_content["approved"] is False
        assert result.structured_content["via"] == "timeout"
        assert "nobody answered in time" in result.structured_content["summary"]
        with anyio.fail_after(20):
            result = await client.call_tool("ask_human", {"title": "Still there?"})
        assert result.is_error and result.structured_content is not None
        assert result.structured_content["answered"] is False and result.structured_content["state"] == "expired"
        assert result.structured_content["summary"].startswith("Nobody answered in time")
        with anyio.fail_after(20):
            denied = await client.call_tool("permission_prompt", {"tool_name": "Bash", "input": {"command": "ls"}})
        verdict = json.loads(text(denied))
        assert verdict["behavior"] == "deny" and "Nobody answered in time" in verdict["message"]
        # a request's own timeout (the agent's `timeout_seconds`) applies the same way
        with anyio.fail_after(20):
            result = await client.call_tool("ask_human", {"title": "Quick one", "timeout_seconds": 0.2})
        assert result.structured_content is not None and result.structured_content["state"] == "expired"


async def test_a_cancelled_call_or_a_closed_client_cancels_the_request(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, mcp_config()) as bridge:
        async with over_stdio(bridge) as client:
            with anyio.CancelScope() as scope:
                async def cancel_once_posted() -> None:
                    await next_request(bridge)
                    scope.cancel()
                asyncio.create_task(cancel_once_posted())  # noqa: RUF006
                await client.call_tool("permission_prompt", {"tool_name": "Bash", "input": {"command": "make"}})
            first = (await bridge.store.list_requests())[0]
            cancelled = await wait_for(lambda: _closed(bridge, first.id), 15)
            assert cancelled.state is RequestState.cancelled and "MCP client stopped waiting" in (cancelled.error or "")

            waiting = asyncio.create_task(client.call_tool("ask_human", {"title": "Are you there?"}))
            second = await next_request(bridge)
        # the client went away (its process was stopped with the call still waiting)
        gone = await wait_for(lambda: _closed(bridge, second["id"]), 15)
        assert gone.state is RequestState.cancelled
        with pytest.raises(Exception, match="Connection closed"):
            await waiting


async def _closed(bridge: Any, request_id: str) -> Any:
    request = await bridge.store.get_request(request_id)
    return request if request is not None and not request.is_open else None


async def test_a_daemon_restart_mid_wait_is_ridden_out(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = mcp_config({"http": {"listen": f"127.0.0.1:{port}"}})
    url = f"http://127.0.0.1:{port}"
    async with over_stdio(url) as client:
        async with running_bridge(tmp_path, config) as bridge:
            prompting = asyncio.create_task(client.call_tool("permission_prompt", {
                "tool_name": "Write", "input": {"file_path": "/srv/app/.env", "content": "DEBUG=0"}}))
            request = await next_request(bridge)
        # the daemon is down; the waiting call keeps trying and its request stays open
        assert not prompting.done()
        async with running_bridge(tmp_path, config) as bridge:
            assert (await stored(bridge, request["id"])).state is RequestState.posted
            await answer(bridge, request["id"], {"value": "yes"})
            with anyio.fail_after(30):
                verdict = json.loads(text(await prompting))
        assert verdict == {"behavior": "allow", "updatedInput": {"file_path": "/srv/app/.env", "content": "DEBUG=0"}}


async def test_a_hold_returns_a_handle_and_await_answer_waits_on(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, mcp_config()) as bridge, \
            over_stdio(bridge, "--hold", "200ms", "--progress-every", "50ms") as client:
        result = await client.call_tool("ask_human", {"title": "Which branch?"})
        assert not result.is_error and result.structured_content is not None
        handle = result.structured_content
        assert handle["pending"] is True and handle["state"] == "posted" and "await_answer" in handle["summary"]
        result = await client.call_tool("await_answer", {"request_id": handle["request_id"], "wait_seconds": 0.05})
        assert result.structured_content is not None and result.structured_content["pending"] is True

        progress: list[str | None] = []

        async def seen(done: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        waiting = asyncio.create_task(client.call_tool(
            "await_answer", {"request_id": handle["request_id"], "wait_seconds": 60}, progress_callback=seen))
        await wait_for(lambda: len(progress) >= 2, 15)  # notifications while it holds
        assert handle["request_id"] in str(progress[0])
        await answer(bridge, handle["request_id"], {"value": "main"})
        result = await waiting
        # the configured hold (200ms) is shorter than the 60 s asked for: answered within it, or pending again
        final = result.structured_content or {}
        if final.get("pending"):
            again = await client.call_tool("await_answer", {"request_id": handle["request_id"]})
            final = again.structured_content or {}
        assert final["values"] == {"answer": "main"} and final["answered_by"] == "ops"

        missing = await client.call_tool("await_answer", {"request_id": "r_nosuchrequest"})
        assert missing.is_error and "404" in text(missing)
        bad = await client.call_tool("await_answer", {"request_id": "../v1/sources"})
        assert bad.is_error


async def test_progress_keeps_a_long_call_alive(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, mcp_config()) as bridge, \
            over_stdio(bridge, "--progress-every", "50ms") as client:
        progress: list[float] = []

        async def seen(done: float, total: float | None, message: str | None) -> None:
            progress.append(done)

        asking = asyncio.create_task(client.call_tool("ask_human", {"title": "Go?"}, progress_callback=seen))
        request = await next_request(bridge)
        await wait_for(lambda: len(progress) >= 3, 15)
        assert progress == sorted(progress) and len(set(progress)) == len(progress)  # increasing
        await answer(bridge, request["id"], {"value": "go"})
        assert (await asking).structured_content["values"] == {"answer": "go"}  # type: ignore[index]


async def test_tasks_extension_over_stdio(tmp_path: Path) -> None:
    tasks = TasksClient()
    async with running_bridge(tmp_path, mcp_config()) as bridge, over_stdio(bridge, extensions=[tasks]) as client:
        asking = asyncio.create_task(client.call_tool("request_approval", {"tool_name": "deploy",
                                                                           "arguments": {"to": "prod"}}))
        request = await next_request(bridge)
        await wait_for(lambda: tasks.polls >= 1, 15)
        assert [(t.task_id, t.status) for t in tasks.created] == [(request["id"], "working")]
        await answer(bridge, request["id"], {"value": "yes"})
        with anyio.fail_after(20):
            result = await asking
        assert result.structured_content is not None and result.structured_content["approved"] is True


async def test_sigterm_stops_at_once_and_cancels_what_it_waited_for(tmp_path: Path) -> None:
    """An MCP client stops its server with SIGTERM when closing stdin is not enough; the
    server must not hang on its stdin reader, and must not leave its request for people."""
    async with running_bridge(tmp_path, mcp_config()) as bridge:
        process = await asyncio.create_subprocess_exec(
            HITL_BRIDGE, "mcp", "--url", bridge.base_url, "--token", AGENT_TOKEN,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        assert process.stdin is not None and process.stdout is not None
        try:
            for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                                "protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "raw", "version": "1"}}},
                            {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "ask_human", "arguments": {"title": "Still needed?"}}}):
                process.stdin.write(json.dumps(message).encode() + b"\n")
            await process.stdin.drain()
            assert json.loads(await process.stdout.readline())["id"] == 1
            request = await next_request(bridge)
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(15):
                assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        cancelled = await stored(bridge, request["id"])
        assert cancelled.state is RequestState.cancelled


async def test_a_bridge_gone_for_good_is_said_and_the_request_kept(tmp_path: Path) -> None:
    port = free_port()
    config = mcp_config({"http": {"listen": f"127.0.0.1:{port}"}})
    async with over_stdio(f"http://127.0.0.1:{port}", "--give-up-after", "1s") as client:
        async with running_bridge(tmp_path, config) as bridge:
            asking = asyncio.create_task(client.call_tool("ask_human", {"title": "Anyone?"}))
            prompting = asyncio.create_task(client.call_tool("permission_prompt", {
                "tool_name": "Bash", "input": {"command": "make deploy"}}))
            await wait_for(lambda: _two_open(bridge), 15)
        with anyio.fail_after(30):
            result, denied = await asking, await prompting
        assert result.is_error and "no answer for 1 s" in text(result) and "stays open" in text(result)
        verdict = json.loads(text(denied))
        assert verdict["behavior"] == "deny" and "await_answer" in verdict["message"]
    async with running_bridge(tmp_path, config) as bridge:  # nothing was cancelled
        assert {r.state for r in await bridge.store.list_requests()} == {RequestState.posted}


async def _two_open(bridge: Any) -> bool:
    return len(await bridge.store.list_requests(states=[RequestState.posted])) == 2
