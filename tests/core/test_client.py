"""The Python client against a real daemon: ask and wait, approvals around a function,
every way a request can close, refusals, and a daemon that restarts mid-wait."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.client import (
    AsyncClient,
    BridgeError,
    BridgeRefused,
    BridgeUnavailable,
    Client,
    NoAnswer,
    Rejected,
    choice,
    confirm,
    text,
)
from tests.harness import make_settings, running_bridge, wait_for


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
        assert info.value.status == 401
        client = AsyncClient(bridge.base_url, token=token)
        with pytest.raises(BridgeRefused) as info:
            await client.ask("Pick", [choice("env", "Where?", [])])
        assert info.value.status == 422 and "at least one option" in info.value.detail
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
