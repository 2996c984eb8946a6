"""`hitl-bridge mcp` (its own process, stdio) with several tool calls waiting at once: they
share one watch stream to the daemon instead of a long poll each, each still gets its own
answer, a cancelled call still cancels only its request, and the stream rides out a daemon
restart. The daemon's change feed says what it holds: streams, ids, long polls."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import anyio

from bridge.daemon import Daemon
from bridge.models import RequestState
from tests.harness import running_bridge, wait_for
from tests.mcp.conftest import answer, mcp_config, open_requests, over_stdio, stored

WITHIN = 15.0


def one_stream_on(daemon: Daemon, count: int) -> bool:
    """The daemon holds one watch stream on `count` requests, and no long poll."""
    changes = daemon.service.changes
    return changes.stream_count() == 1 and changes.watched_count() == count and changes.waiting_count() == 0


async def posted(bridge: Daemon, count: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = await wait_for(lambda: _at_least(bridge, count), WITHIN)
    return found


async def _at_least(bridge: Daemon, count: int) -> list[dict[str, Any]] | None:
    found = await open_requests(bridge)
    return found if len(found) >= count else None


async def test_concurrent_calls_share_one_stream_and_each_gets_its_answer(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, mcp_config()) as bridge, over_stdio(bridge) as client:
        calls = {title: asyncio.create_task(client.call_tool("ask_human", {"title": title}))
                 for title in ("Which region?", "Which branch?", "Which tag?")}
        requests = {r["title"]: r["id"] for r in await posted(bridge, 3)}
        await wait_for(lambda: one_stream_on(bridge, 3), WITHIN)
        for title, value in (("Which tag?", "v2"), ("Which region?", "eu"), ("Which branch?", "main")):
            assert (await answer(bridge, requests[title], {"value": value})).status_code == 200
            with anyio.fail_after(WITHIN):
                result = await calls[title]
            assert result.structured_content is not None
            assert result.structured_content["values"] == {"answer": value}
        await wait_for(lambda: bridge.service.changes.stream_count() == 0, WITHIN)  # nobody waits: closed

        # a call that starts later moves the waits to a new stream that covers it too
        first = asyncio.create_task(client.call_tool("ask_human", {"title": "First?"}))
        [one] = await posted(bridge, 1)
        await wait_for(lambda: one_stream_on(bridge, 1), WITHIN)
        second = asyncio.create_task(client.call_tool("ask_human", {"title": "Second?"}))
        two = next(r for r in await posted(bridge, 2) if r["id"] != one["id"])
        await wait_for(lambda: one_stream_on(bridge, 2), WITHIN)  # the old stream was closed
        assert (await answer(bridge, one["id"], {"value": "a"})).status_code == 200
        assert (await answer(bridge, two["id"], {"value": "b"})).status_code == 200
        with anyio.fail_after(WITHIN):
            results = [await first, await second]
        assert [r.structured_content["values"] for r in results] == [{"answer": "a"}, {"answer": "b"}]  # type: ignore[index]


async def test_a_cancelled_call_cancels_only_its_request(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, mcp_config()) as bridge, over_stdio(bridge) as client:
        kept = asyncio.create_task(client.call_tool("ask_human", {"title": "Keep me"}))
        with anyio.CancelScope() as scope:
            async def cancel_once_both_wait() -> None:
                await posted(bridge, 2)
                await wait_for(lambda: one_stream_on(bridge, 2), WITHIN)
                scope.cancel()
            asyncio.create_task(cancel_once_both_wait())  # noqa: RUF006
            await client.call_tool("ask_human", {"title": "Drop me"})
        requests = {r.title: r for r in await bridge.store.list_requests()}
        dropped = await wait_for(lambda: _closed(bridge, requests["Drop me"].id), WITHIN)
        assert dropped.state is RequestState.cancelled
        assert (await stored(bridge, requests["Keep me"].id)).state is RequestState.posted
        assert (await answer(bridge, requests["Keep me"].id, {"value": "kept"})).status_code == 200
        with anyio.fail_after(WITHIN):
            result = await kept
        assert result.structured_content is not None and result.structured_content["values"] == {"answer": "kept"}


async def test_the_shared_stream_rides_out_a_daemon_restart(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = mcp_config({"http": {"listen": f"127.0.0.1:{port}"}})
    async with over_stdio(f"http://127.0.0.1:{port}") as client:
        async with running_bridge(tmp_path, config) as bridge:
            calls = [asyncio.create_task(client.call_tool("ask_human", {"title": f"Q{n}"})) for n in range(2)]
            ids = {r["title"]: r["id"] for r in await posted(bridge, 2)}
            await wait_for(lambda: one_stream_on(bridge, 2), WITHIN)
        assert not any(c.done() for c in calls)
        async with running_bridge(tmp_path, config) as bridge:
            assert (await answer(bridge, ids["Q1"], {"value": "one"})).status_code == 200  # maybe before it is back
            await wait_for(lambda: one_stream_on(bridge, 1), 30)  # reconnected, on the id still open
            assert (await answer(bridge, ids["Q0"], {"value": "zero"})).status_code == 200
            with anyio.fail_after(WITHIN):
                results = [await c for c in calls]
        assert [r.structured_content["values"] for r in results] == [{"answer": "zero"}, {"answer": "one"}]  # type: ignore[index]


async def _closed(bridge: Daemon, request_id: str) -> Any:
    request = await bridge.store.get_request(request_id)
    return request if request is not None and not request.is_open else None
