"""Signed callbacks through the durable outbox, against a real receiver on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from hitl_bridge_client import verify_callback

from tests.harness import callback_receiver, running_bridge, wait_for

SECRET = "whsec-0123456789abcdef"
FAST_RETRY = {"delivery": {"first_retry": "20ms", "max_backoff": "100ms"}}


def body(url: str, **kw: Any) -> dict[str, Any]:
    return {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}],
            "callback": {"url": url, "secret": SECRET}, **kw}


async def test_signed_native_callback_on_answer(tmp_path: Path) -> None:
    async with callback_receiver() as rx, running_bridge(tmp_path) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        rid = (await client.post("/v1/requests", json=body(rx.url, external_id="e-1"))).json()["id"]
        await client.post(f"/v1/requests/{rid}/answer", json={"value": "no", "responder": "ana", "reason": "freeze"})
        got = await wait_for(lambda: rx.received)
        assert verify_callback(SECRET, got[0].headers, got[0].body)
        assert not verify_callback("wrong-secret-000000", got[0].headers, got[0].body)
        payload = json.loads(got[0].body)
        assert payload["request_id"] == rid and payload["external_id"] == "e-1" and payload["state"] == "answered"
        assert payload["answer"]["values"] == {"ok": "no"} and payload["answer"]["reason"] == "freeze"
        assert got[0].headers["x-hitl-event"] == "answered"
        await wait_for(lambda: client.get(f"/v1/requests/{rid}"), timeout=5)
        state = await wait_for(_state_is(client, rid, "delivered"))
        assert state


def _state_is(client: httpx.AsyncClient, rid: str, state: str) -> Any:
    async def check() -> bool:
        return bool((await client.get(f"/v1/requests/{rid}")).json()["state"] == state)
    return check


async def test_structured_callback_body_and_cancel_callback(tmp_path: Path) -> None:
    structured = {"request_id": "q-9", "objective": "Pick", "callback": {"url": "", "secret": SECRET},
                  "questions": [{"id": "env", "question": "Which?", "input_type": "selection",
                                 "options": ["a", "b"]},
                                {"id": "go", "question": "Go?", "input_type": "approval"}]}
    async with callback_receiver() as rx, running_bridge(tmp_path) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        structured["callback"]["url"] = rx.url  # type: ignore[index]
        rid = (await client.post("/v1/requests", json=structured)).json()["id"]
        await client.post(f"/v1/requests/{rid}/answer", json={"values": {"env": "b", "go": "yes"}})
        got = await wait_for(lambda: rx.received)
        payload = json.loads(got[0].body)
        assert payload["request_id"] == "q-9"
        assert payload["answers"] == {"env": "b", "go": True}
        assert payload["raw_input"] and isinstance(payload["response_time_ms"], int)
        other = (await client.post("/v1/requests", json=body(rx.url))).json()["id"]
        await client.post(f"/v1/requests/{other}/cancel", json={"reason": "superseded"})
        await wait_for(lambda: len(rx.received) == 2)
        cancelled = json.loads(rx.received[1].body)
        assert cancelled["state"] == "cancelled" and cancelled["answer"] is None
        assert cancelled["reason"] == "superseded"


async def test_receiver_down_then_up_delivers_exactly_once(tmp_path: Path) -> None:
    async with callback_receiver() as rx, running_bridge(tmp_path, FAST_RETRY) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        rx.down = True
        rid = (await client.post("/v1/requests", json=body(rx.url))).json()["id"]
        await client.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})
        await wait_for(lambda: rx.refused >= 3)
        events = (await client.get(f"/v1/requests/{rid}/events")).json()["events"]
        retries = [e for e in events if e["kind"] == "delivery_retry"]
        assert retries and "HTTP 503" in retries[0]["data"]["error"]
        rx.down = False
        await wait_for(_state_is(client, rid, "delivered"))
        assert len(rx.received) == 1


async def test_pending_outbox_survives_restart(tmp_path: Path) -> None:
    async with callback_receiver() as rx:
        rx.down = True
        async with running_bridge(tmp_path, FAST_RETRY) as bridge, \
                httpx.AsyncClient(base_url=bridge.base_url) as client:
            rid = (await client.post("/v1/requests", json=body(rx.url))).json()["id"]
            await client.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})
            await wait_for(lambda: rx.refused >= 1)
        rx.down = False
        assert not rx.received
        async with running_bridge(tmp_path, FAST_RETRY) as bridge, \
                httpx.AsyncClient(base_url=bridge.base_url) as client:
            await wait_for(_state_is(client, rid, "delivered"))
            events = (await client.get(f"/v1/requests/{rid}/events")).json()["events"]
        assert len(rx.received) == 1
        assert [e["kind"] for e in events].count("delivered") == 1


async def test_delivery_cut_short_by_a_stop_is_retried_at_once_on_start(tmp_path: Path) -> None:
    """A stop while a callback is in flight hands the claim back: the next start retries at
    once instead of waiting out the lease (delivery.timeout + 30 s)."""
    async with callback_receiver() as rx:
        rx.hold = asyncio.Event()
        try:
            async with running_bridge(tmp_path, FAST_RETRY) as bridge, \
                    httpx.AsyncClient(base_url=bridge.base_url) as client:
                rid = (await client.post("/v1/requests", json=body(rx.url))).json()["id"]
                await client.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})
                await wait_for(lambda: rx.held >= 1)
        finally:
            rx.hold.set()
        rx.hold = None
        async with running_bridge(tmp_path, FAST_RETRY) as bridge, \
                httpx.AsyncClient(base_url=bridge.base_url) as client:
            await wait_for(_state_is(client, rid, "delivered"), timeout=10)
    assert len(rx.received) == 1


async def test_gives_up_after_horizon_and_marks_failed(tmp_path: Path) -> None:
    config = {"delivery": {"first_retry": "10ms", "max_backoff": "20ms", "give_up_after": "300ms"}}
    async with callback_receiver() as rx, running_bridge(tmp_path, config) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        rx.down = True
        rid = (await client.post("/v1/requests", json=body(rx.url))).json()["id"]
        await client.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})
        await wait_for(_state_is(client, rid, "failed"))
        data = (await client.get(f"/v1/requests/{rid}")).json()
        assert "HTTP 503" in data["error"]
        assert data["outbox"][0]["dead"] is True
        assert "hitl_outbox_dead 1.0" in (await client.get("/metrics")).text
        # an operator fixes the receiver and redelivers
        rx.down = False
        r = await client.post(f"/v1/requests/{rid}/redeliver")
        assert r.status_code == 200, r.text
        await wait_for(_state_is(client, rid, "delivered"))
        assert len(rx.received) == 1
        assert "hitl_outbox_dead 0.0" in (await client.get("/metrics")).text


async def test_callback_allow_list(tmp_path: Path) -> None:
    config = {"http": {"callback_allow": ["hooks.example.com", "*.internal"]}}
    async with running_bridge(tmp_path, config) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        refused = await client.post("/v1/requests", json=body("http://169.254.169.254/latest"))
        assert refused.status_code == 422 and "callback_allow" in refused.json()["detail"]
        allowed = await client.post("/v1/requests", json=body("https://ci.internal/hook"))
        assert allowed.status_code == 201


async def test_secret_answer_reaches_callback_but_is_not_kept_without_key(tmp_path: Path) -> None:
    async with callback_receiver() as rx, running_bridge(tmp_path) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        req = body(rx.url, questions=[{"id": "pw", "kind": "secret", "prompt": "Password?"}])
        rid = (await client.post("/v1/requests", json=req)).json()["id"]
        await client.post(f"/v1/requests/{rid}/answer", json={"value": "hunter2-very-secret"})
        got = await wait_for(lambda: rx.received)
        assert json.loads(got[0].body)["answer"]["values"] == {"pw": "hunter2-very-secret"}
        await wait_for(_state_is(client, rid, "delivered"))
        stored = await bridge.store.get_request(rid)
        assert stored and stored.answer and stored.answer.values["pw"] == "[not kept]"
    for path in tmp_path.glob("bridge.db*"):
        assert b"hunter2-very-secret" not in path.read_bytes()
