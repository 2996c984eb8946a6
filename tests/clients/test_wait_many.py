"""`wait_many` of the Python clients against a real daemon (one watch stream for many
requests): outcomes in the order the requests close, closed already, unknown ids, `max_wait`,
a daemon restart mid-stream (answers given while it was down are not lost), and a stream cut
by the network (a raw server on 127.0.0.1) reopened with the ids still open."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from hitl_bridge_client import Answer, AsyncClient, Client, Missing, NoAnswer, StillOpen, Unauthorized

from bridge.daemon import Daemon
from tests.docs.snippets import DOCS, blocks
from tests.harness import make_settings, running_bridge, wait_for

CONFIRM = [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]
WITHIN = 10.0


async def create(base_url: str) -> str:
    async with httpx.AsyncClient(base_url=base_url) as http:
        response = await http.post("/v1/requests", json={"title": "Deploy", "questions": CONFIRM})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def act(base_url: str, request_id: str, action: str, body: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        response = await http.post(f"/v1/requests/{request_id}/{action}", json=body)
    assert response.status_code == 200, response.text


async def watched(daemon: Daemon, count: int) -> None:
    await wait_for(lambda: daemon.service.changes.watched_count() == count, WITHIN)


async def test_outcomes_arrive_in_the_order_requests_close(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge:
        ids = [await create(bridge.base_url) for _ in range(4)]
        await act(bridge.base_url, ids[3], "answer", {"value": "no"})  # closed before the stream
        got: list[Any] = []

        async def collect() -> None:
            async for item in AsyncClient(bridge.base_url).wait_many([*ids, "0000000000000000000"]):
                got.append(item)

        collecting = asyncio.ensure_future(collect())
        await watched(bridge, 3)
        assert [type(g) for g in got] in ([Answer, Missing], [Missing, Answer])
        await act(bridge.base_url, ids[2], "answer", {"value": "yes"})
        await act(bridge.base_url, ids[0], "cancel", {"reason": "not needed"})
        await act(bridge.base_url, ids[1], "answer", {"value": "no", "reason": "not today"})
        await asyncio.wait_for(collecting, WITHIN)
        first = {type(g): g for g in got[:2]}
        assert (first[Answer].request_id, first[Answer].values) == (ids[3], {"ok": "no"})
        assert first[Missing].request_id == "0000000000000000000" and first[Missing].status == 404
        assert isinstance(got[2], Answer) and got[2].request_id == ids[2]
        assert isinstance(got[3], NoAnswer) and got[3].request_id == ids[0] and got[3].state == "cancelled"
        assert isinstance(got[4], Answer) and got[4].reason == "not today"
        assert len(got) == 5


async def test_the_blocking_client_gives_up_at_max_wait_with_still_open(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge:
        ids = [await create(bridge.base_url) for _ in range(3)]
        await act(bridge.base_url, ids[1], "answer", {"value": "yes"})
        got = await asyncio.to_thread(lambda: list(Client(bridge.base_url).wait_many(ids, max_wait=0.5)))
        assert isinstance(got[0], Answer) and got[0].request_id == ids[1]
        assert all(isinstance(g, StillOpen) for g in got[1:])
        assert sorted(g.request_id for g in got[1:]) == sorted([ids[0], ids[2]])
        await watched(bridge, 0)


async def test_a_wrong_token_is_raised_not_yielded(tmp_path: Path) -> None:
    config = {"http": {"api_tokens": {"ops": {"token": "ops-token-0123456789"}}}}
    async with running_bridge(tmp_path, config) as bridge:
        with pytest.raises(Unauthorized):
            async for _ in AsyncClient(bridge.base_url, token="wrong").wait_many(["x"]):
                pass


async def test_a_daemon_restart_mid_stream_loses_nothing(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = make_settings(tmp_path, {"http": {"listen": f"127.0.0.1:{port}"}})
    got: list[Any] = []
    async with running_bridge(tmp_path, settings=settings) as bridge:
        ids = [await create(bridge.base_url) for _ in range(2)]

        async def collect() -> None:
            async for item in AsyncClient(bridge.base_url).wait_many(ids):
                got.append(item)

        collecting = asyncio.ensure_future(collect())
        await watched(bridge, 2)
    # the daemon is down (the stream ended: "shutdown"); an answer is given meanwhile, offline
    config = tmp_path / "cli.yaml"
    config.write_text(f"store: {{url: '{settings.store.url}'}}\nsources: [{{type: webhook}}]\n")
    cli = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "hitl-bridge"), "-c", str(config), "answer", "--offline", ids[1], "yes",
        "--as", "bob", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=tmp_path)
    out, _ = await asyncio.wait_for(cli.communicate(), 60)
    assert cli.returncode == 0, out.decode()
    assert got == [] and not collecting.done()
    async with running_bridge(tmp_path, settings=settings) as bridge:
        await wait_for(lambda: got, 30)  # reconnected: told at once of the answer it missed
        assert isinstance(got[0], Answer) and got[0].request_id == ids[1]
        await watched(bridge, 1)
        await act(bridge.base_url, ids[0], "answer", {"value": "no"})
        await asyncio.wait_for(collecting, WITHIN)
    assert [(g.request_id, g.values) for g in got] == [(ids[1], {"ok": "yes"}), (ids[0], {"ok": "no"})]


def closed_event(request_id: str) -> bytes:
    view = {"id": request_id, "state": "answered", "answer": {"values": {"ok": "yes"}, "via": "api",
                                                               "responder": {"name": "ann"}}}
    return f"event: closed\ndata: {json.dumps(view)}\n\n".encode()


@pytest.mark.parametrize("blocking", [False, True])
async def test_a_cut_stream_is_reopened_with_the_ids_still_open(blocking: bool) -> None:
    """A server that cuts the first stream after one event (no `end`, like a dropped
    connection), then ends the second properly: the second body names only the ids left."""
    bodies: list[dict[str, Any]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length"))
        body = json.loads(await reader.readexactly(length))
        bodies.append(body)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
        if len(bodies) == 1:
            writer.write(closed_event("b") + b"event: closed\ndata: {\"id\": \"a\", \"sta")  # cut mid-event
        else:
            writer.write(b": keep-alive\n\n" + b"".join(closed_event(i) for i in body["ids"]) +
                         b'event: end\ndata: {"open": [], "reason": "done"}\n\n')
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        url = f"http://127.0.0.1:{port}"
        if blocking:
            got = await asyncio.to_thread(lambda: list(Client(url).wait_many(["a", "b", "c"])))
        else:
            got = [item async for item in AsyncClient(url).wait_many(["a", "b", "c"])]
    assert [g.request_id for g in got] == ["b", "a", "c"] and all(isinstance(g, Answer) for g in got)
    assert [b["ids"] for b in bodies] == [["a", "b", "c"], ["a", "c"]]


async def test_the_documented_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/clients.md's wait_many example, run as written against a real daemon."""
    [example] = [b.text for b in blocks(DOCS / "clients.md") if b.language == "python" and "wait_many" in b.text]
    async with running_bridge(tmp_path) as bridge:
        monkeypatch.setenv("HITL_BRIDGE_URL", bridge.base_url)
        printed: list[str] = []
        running = asyncio.ensure_future(asyncio.to_thread(
            exec, example, {"print": lambda *words: printed.append(" ".join(map(str, words)))}))
        requests = await wait_for(lambda: _two_open(bridge.base_url), WITHIN)
        titles = {r["title"]: r["id"] for r in requests}
        await watched(bridge, 2)
        await act(bridge.base_url, titles["Delete b.log?"], "answer", {"value": "no"})
        await act(bridge.base_url, titles["Delete a.log?"], "answer", {"value": "yes"})
        await asyncio.wait_for(running, WITHIN)
    assert printed[0].startswith(f"keep {titles['Delete b.log?']}")
    assert printed[1] == f"delete {titles['Delete a.log?']}"


async def _two_open(base_url: str) -> list[dict[str, Any]] | None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        found: list[dict[str, Any]] = (await http.get("/v1/requests", params={"state": "posted"})).json()["requests"]
    return found if len(found) == 2 else None
