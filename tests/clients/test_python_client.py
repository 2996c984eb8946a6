"""The Python client against a real daemon: ask and wait, approvals around a function,
every way a request can close, the rest of the API (get, list, answer, cancel, events),
typed refusals, settings from the environment, and a daemon that restarts mid-wait."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import hitl_bridge_client
import httpx
import pytest
from hitl_bridge_client import (
    AsyncClient,
    BridgeError,
    BridgeRefused,
    BridgeUnavailable,
    Client,
    Conflict,
    InvalidRequest,
    NoAnswer,
    NotFound,
    Rejected,
    StillOpen,
    Unauthorized,
    choice,
    confirm,
    text,
)

from bridge.models import RequestState
from tests.harness import make_settings, running_bridge, state_is, wait_for


async def open_requests(base_url: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=base_url) as http:
        found: list[dict[str, Any]] = (await http.get("/v1/requests", params={"state": "posted"})).json()["requests"]
        return found


async def answer_next(base_url: str, values: dict[str, Any], **extra: Any) -> str:
    """Play the person: wait for the next open request and answer it through the API."""
    found = await wait_for(lambda: open_requests(base_url))
    request_id = str(found[0]["id"])
    async with httpx.AsyncClient(base_url=base_url) as http:
        response = await http.post(f"/v1/requests/{request_id}/answer", json={"values": values, **extra})
    assert response.status_code == 200, response.text
    return request_id


async def test_async_ask_waits_for_the_answer(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge:
        client = AsyncClient(bridge.base_url)
        asking = asyncio.create_task(client.ask(
            "Which environment?", [choice("env", "Where to?", ["staging", "prod"]), text("note", "Why?")],
            context={"image": "api:2.3"}, labels={"team": "payments"}))
        rid = await answer_next(bridge.base_url, {"env": "prod", "note": "hotfix"}, responder="ana")
        answer = await asking
        assert (answer.request_id, answer.values, answer.via) == (rid, {"env": "prod", "note": "hotfix"}, "api")
        assert answer.responder["name"] == "ana"
        stored = await bridge.store.get_request(rid)
        assert stored is not None and stored.context == {"image": "api:2.3"} and stored.labels == {"team": "payments"}
        assert stored.external_id is not None and stored.external_id.startswith("client-")


async def test_blocking_client_and_an_approved_function(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge:
        client = Client(bridge.base_url)
        ran: list[str] = []

        @client.require_approval(title="Run a shell command", labels={"risk": "high"})
        def run(command: str, *, dry_run: bool = False) -> str:
            ran.append(command)
            return f"ran {command}"

        calling = asyncio.create_task(asyncio.to_thread(run, "kubectl rollout restart deploy/api"))
        rid = await answer_next(bridge.base_url, {"approve": "yes"})
        assert await calling == "ran kubectl rollout restart deploy/api"
        assert ran == ["kubectl rollout restart deploy/api"]
        stored = await bridge.store.get_request(rid)
        assert stored is not None and stored.title == "Run a shell command" and stored.tool == "run"
        assert stored.context["arguments"] == {"command": "kubectl rollout restart deploy/api"}
        assert stored.labels == {"risk": "high"}


async def test_a_rejected_approval_never_runs_the_function(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge:
        client = AsyncClient(bridge.base_url)
        ran: list[object] = []

        @client.require_approval()
        async def drop_table(name: str, conn: object) -> None:
            ran.append(name)

        calling = asyncio.create_task(drop_table("users", object()))  # an argument JSON cannot hold
        rid = await answer_next(bridge.base_url, {"approve": "no"}, responder="bob", reason="not on a Friday")
        with pytest.raises(Rejected) as info:
            await calling
        assert ran == [] and info.value.reason == "not on a Friday" and "bob" in str(info.value)
        stored = await bridge.store.get_request(rid)
        assert stored is not None and stored.title == "Approve drop_table?" and stored.tool == "drop_table"
        assert stored.context["arguments"]["name"] == "users" and "object" in stored.context["arguments"]["conn"]


async def test_closing_without_an_answer_raises_no_answer(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge:
        client = AsyncClient(bridge.base_url)
        asking = asyncio.create_task(client.ask("Go?", [confirm("ok", "Go?")]))
        found = await wait_for(lambda: open_requests(bridge.base_url))
        async with httpx.AsyncClient(base_url=bridge.base_url) as http:
            await http.post(f"/v1/requests/{found[0]['id']}/cancel", json={"reason": "run aborted"})
        with pytest.raises(NoAnswer) as info:
            await asking
        assert info.value.state == "cancelled" and "run aborted" in str(info.value)


async def test_the_same_external_id_asks_once(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge:
        client = AsyncClient(bridge.base_url)
        first = asyncio.create_task(client.ask("Go?", [confirm("ok", "Go?")], external_id="run-7/step-2"))
        await answer_next(bridge.base_url, {"ok": "yes"})
        assert (await first).values == {"ok": "yes"}
        again = await client.ask("Go?", [confirm("ok", "Go?")], external_id="run-7/step-2")  # a retried step
        assert again.values == {"ok": "yes"} and again.request_id == (await first).request_id
        assert len(await bridge.store.list_requests()) == 1


async def test_refusals_are_clear(tmp_path: Path) -> None:
    token = "t0k3n-" + "x" * 20
    async with running_bridge(tmp_path, {"http": {"api_tokens": [token]}}) as bridge:
        with pytest.raises(BridgeRefused) as info:
            await AsyncClient(bridge.base_url).ask("Go?", [confirm("ok", "Go?")])
        assert info.value.status == 401 and isinstance(info.value, Unauthorized)
        client = AsyncClient(bridge.base_url, token=token)
        with pytest.raises(InvalidRequest) as invalid:
            await client.ask("Pick", [choice("env", "Where?", [])])
        assert invalid.value.status == 422 and "at least one option" in invalid.value.detail
        with pytest.raises(BridgeError, match="callback"):
            await client.ask("Token?", [{"id": "t", "kind": "secret", "prompt": "API token?"}])
        assert await bridge.store.list_requests() == []


async def test_a_daemon_restart_mid_wait_is_ridden_out(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = make_settings(tmp_path, {"http": {"listen": f"127.0.0.1:{port}"}})
    client = AsyncClient(f"http://127.0.0.1:{port}")
    async with running_bridge(tmp_path, settings=settings) as bridge:
        asking = asyncio.create_task(client.ask("Go?", [confirm("ok", "Go?")]))
        await wait_for(lambda: open_requests(bridge.base_url))
    # the daemon is down; the client keeps trying, then finds the answer after the restart
    async with running_bridge(tmp_path, settings=settings) as bridge:
        await answer_next(bridge.base_url, {"ok": "no"})
        assert (await asking).values == {"ok": "no"}
    with pytest.raises(BridgeUnavailable):
        await AsyncClient(f"http://127.0.0.1:{port}", unavailable_after=0).ask("Go?", [confirm("ok", "Go?")])


async def test_the_rest_of_the_api(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, AsyncClient(bridge.base_url) as client:
        first = await client.create(hitl_bridge_client.request_body("Ship it?", labels={"team": "a"}))
        second = await client.create({"title": "Where?", "questions": [choice("env", "Where?", ["a", "b"])]})
        for rid in (first, second):  # posting follows the 201: both posted before listing what is
            await wait_for(lambda rid=rid: state_is(bridge, rid, RequestState.posted))
        listed = await client.list("posted")
        assert [r["id"] for r in listed] == [second, first]  # newest first
        shown = await client.get(first)
        assert shown["labels"] == {"team": "a"} and shown["external_id"].startswith("client-")
        assert [(q["id"], q["kind"], q["prompt"]) for q in shown["questions"]] == [("ok", "confirm", "Ship it?")]
        view = await client.answer(first, "no", responder="ana", reason="freeze")
        assert view["state"] == "answered" and view["answer"]["reason"] == "freeze"
        with pytest.raises(Conflict) as closed:
            await client.answer(first, "yes")
        assert closed.value.status == 409 and "already" in closed.value.detail
        with pytest.raises(InvalidRequest):
            await client.answer(second, "c")  # not one of the options
        assert (await client.cancel(second, "moot"))["state"] == "cancelled"
        kinds = [e["kind"] for e in await client.events(second)]
        assert kinds[0] == "created" and "cancelled" in kinds
        assert [r["id"] for r in await client.list(["answered", "delivered"])] == [first]
        assert [s["name"] for s in await client.sources()] == ["webhook"]
        with pytest.raises(NoAnswer) as gone:
            await client.wait(second)
        assert gone.value.state == "cancelled"
        with pytest.raises(NotFound):
            await client.get("r_missing")
        with pytest.raises(NotFound):  # an id is one path segment, never a way to other endpoints
            await client.get("../sources")


async def test_max_wait_gives_up_and_leaves_the_request_open(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, AsyncClient(bridge.base_url) as client:
        with pytest.raises(StillOpen) as info:
            await client.ask("Go?", max_wait=0.2)
        assert info.value.state == "posted"
        assert (await client.get(info.value.request_id))["state"] == "posted"
        await client.answer(info.value.request_id, "yes")
        assert (await client.wait(info.value.request_id, max_wait=0)).value == "yes"


async def test_one_line_ask_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "env-t0k3n-" + "y" * 20
    async with running_bridge(tmp_path, {"http": {"api_tokens": {"agent": token}}}) as bridge:
        monkeypatch.setenv("HITL_BRIDGE_URL", bridge.base_url + "/")
        with pytest.raises(Unauthorized):
            await asyncio.to_thread(hitl_bridge_client.ask, "Go?")
        monkeypatch.setenv("HITL_BRIDGE_TOKEN", token)
        asking = asyncio.create_task(asyncio.to_thread(hitl_bridge_client.ask, "Deploy api v2?"))
        async with AsyncClient() as client:
            assert client.base_url == bridge.base_url and token not in repr(client.endpoint)
            found = await wait_for(lambda: client.list("posted"))
            assert found[0]["questions"][0]["prompt"] == "Deploy api v2?"
            await client.answer(found[0]["id"], "yes")
        answer = await asking
        assert answer.value == "yes" and answer.responder_name == "agent"  # the token answers as itself

        ran: list[str] = []

        @hitl_bridge_client.require_approval(title="Restart api")
        async def restart(service: str) -> str:
            ran.append(service)
            return "restarted"

        @hitl_bridge_client.require_approval()
        def drop(table: str) -> None:
            ran.append(table)

        calling = asyncio.create_task(restart("api"))
        await answer_next_as(bridge.base_url, token, {"approve": "yes"})
        assert await calling == "restarted"
        dropping = asyncio.create_task(asyncio.to_thread(drop, "users"))
        await answer_next_as(bridge.base_url, token, {"approve": "no"})
        with pytest.raises(Rejected):
            await dropping
        assert ran == ["api"]
    with pytest.raises(ValueError, match="http:// or https://"):
        Client("127.0.0.1:8787")


async def answer_next_as(base_url: str, token: str, values: dict[str, Any]) -> None:
    async with AsyncClient(base_url, token=token) as client:
        found = await wait_for(lambda: client.list("posted"))
        await client.answer(found[0]["id"], values=values)


async def test_a_value_needs_one_question(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, AsyncClient(bridge.base_url) as client:
        asking = asyncio.create_task(client.ask("Two?", [confirm("a", "A?"), text("b", "B?")]))
        await answer_next(bridge.base_url, {"a": "yes", "b": "because"})
        answer = await asking
        with pytest.raises(BridgeError, match="2 values"):
            _ = answer.value
        assert answer.values == {"a": "yes", "b": "because"}


def _broken_server(replies: list[bytes | None]) -> tuple[Any, list[bytes]]:
    """A server that answers each connection with the next reply (None: close without one)."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        reply = replies.pop(0) if replies else None
        if reply is not None:
            writer.write(reply)
            await writer.drain()
        writer.close()

    return handle, seen


def _reply(status: str, body: bytes) -> bytes:
    return (f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode() + body


async def test_a_lost_reply_is_resent_only_when_that_is_safe() -> None:
    view = b'{"id": "r_1", "state": "answered", "answer": null}'
    handle, seen = _broken_server([None, _reply("503 Service Unavailable", b"{}"), _reply("200 OK", view)])
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    async with server, AsyncClient(url, unavailable_after=5) as client:
        assert (await client.get("r_1"))["state"] == "answered"  # dropped, 503, then the view
        assert len(seen) == 3
        seen.clear()
        with pytest.raises(BridgeUnavailable, match="may have been applied"):
            await client.answer("r_1", "yes")  # the connection broke after sending: never twice
        assert len(seen) == 1 and seen[0].startswith(b"POST /v1/requests/r_1/answer")
    with pytest.raises(BridgeUnavailable, match="no answer for 0 s"):
        Client(url, unavailable_after=0).get("r_1")  # nobody listens any more


async def test_replies_that_are_not_the_api_are_clear_errors() -> None:
    replies = [_reply("200 OK", b"<html>login</html>"), _reply("200 OK", b"[]"), _reply("200 OK", b'{"id": "r_1"}'),
               _reply("401 Unauthorized", b"no")]
    handle, _ = _broken_server(replies)
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    async with server, AsyncClient(url, unavailable_after=1) as client:
        with pytest.raises(BridgeError, match="without JSON: '<html>login"):
            await client.get("r_1")
        with pytest.raises(BridgeError, match="reply has no 'requests'"):
            await client.list()
        with pytest.raises(BridgeError, match="reply has no 'state'"):
            await client.wait("r_1")
        with pytest.raises(Unauthorized, match="no"):
            await client.get("r_1")
