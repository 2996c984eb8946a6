"""The answer path's shortcuts keep its guarantees: the API hands the request it read to the
answer (the store still decides whether it is open), and the outbox delivers a just-closed
request from memory, which must be the request as stored. (A kill -9 between the commit and
the callback: tests/store/test_delivery_crash.py.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from hitl_bridge_client import verify_callback, verify_receipt

from bridge.config import Route
from bridge.crypto import SecretBox
from bridge.models import Request, RequestIn, Responder
from bridge.ports import BridgeAPI, PostResult
from bridge.router import Router
from bridge.service import BridgeService
from bridge.store.sqlite import SQLiteStore
from tests.harness import ManualClock, callback_receiver, running_bridge, wait_for

CALLBACK_SECRET = "whsec-0123456789abcdef"
CODE = "correct horse battery staple"
CONFIG = {"secrets": {"key": "a passphrase that keeps secret answers across deliveries"}}
QUESTIONS = [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}, {"id": "pw", "kind": "secret", "prompt": "Code"}]


def create_body(url: str) -> dict[str, Any]:
    return {"title": "Deploy api?", "questions": QUESTIONS, "callback": {"url": url, "secret": CALLBACK_SECRET}}


async def test_the_first_delivery_from_memory_says_what_a_redelivery_from_the_store_says(tmp_path: Path) -> None:
    async with callback_receiver() as rx, running_bridge(tmp_path, CONFIG) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        rid = (await client.post("/v1/requests", json=create_body(rx.url))).json()["id"]
        r = await client.post(f"/v1/requests/{rid}/answer", json={"values": {"ok": "yes", "pw": CODE},
                                                                  "responder": "ana", "reason": "looks fine"})
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        shown = r.json()
        assert shown["state"] == "answered" and shown["answer"]["values"] == {"ok": "yes", "pw": "[secret]"}
        assert "secret" not in shown.get("callback", {}) and CODE not in r.text
        await wait_for(lambda: rx.received)
        await wait_for(lambda: _state(client, rid, "delivered"))
        assert (await client.post(f"/v1/requests/{rid}/redeliver")).status_code == 200
        await wait_for(lambda: len(rx.received) == 2)
        keys = (await client.get("/.well-known/jwks.json")).json()
    first, again = (json.loads(got.body) for got in rx.received)
    assert all(verify_callback(CALLBACK_SECRET, got.headers, got.body) for got in rx.received)
    assert first["answer"]["values"] == {"ok": "yes", "pw": CODE}  # the secret, opened, to its engine only
    assert first["answer"] == again["answer"] and first["state"] == again["state"] == "answered"
    claims = [await asyncio.to_thread(verify_receipt, body["receipt"], keys) for body in (first, again)]
    assert claims[0] == claims[1]  # the same decision, signed from the copy in memory and from the row
    assert claims[0]["sub"] == rid and claims[0]["values"] == {"ok": "yes", "pw": "[secret]"}
    assert CODE not in first["receipt"]


async def test_two_answers_at_once_one_is_recorded_and_called_back(tmp_path: Path) -> None:
    async with callback_receiver() as rx, running_bridge(tmp_path) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        body = {"title": "Deploy?", "questions": [QUESTIONS[0]],
                "callback": {"url": rx.url, "secret": CALLBACK_SECRET}}
        rid = (await client.post("/v1/requests", json=body)).json()["id"]
        replies = await asyncio.gather(*(client.post(f"/v1/requests/{rid}/answer",
                                                     json={"value": value, "responder": who})
                                         for value, who in (("yes", "ana"), ("no", "bo"))))
        assert sorted(r.status_code for r in replies) == [200, 409]
        winner = next(r for r in replies if r.status_code == 200).json()
        await wait_for(lambda: _state(client, rid, "delivered"))
        events = (await client.get(f"/v1/requests/{rid}/events")).json()["events"]
    assert [e["kind"] for e in events].count("answered") == 1
    assert len(rx.received) == 1
    assert json.loads(rx.received[0].body)["answer"]["values"] == winner["answer"]["values"]


async def _state(client: httpx.AsyncClient, rid: str, state: str) -> bool:
    return bool((await client.get(f"/v1/requests/{rid}")).json()["state"] == state)


class CopyKeeper:
    """A channel whose copies are messages (a Slack-like one): each close must update them."""

    prefixes: tuple[str, ...] = ()

    def __init__(self, name: str) -> None:
        self.name = name
        self.updated: list[str] = []

    async def start(self, bridge: BridgeAPI) -> None: ...

    async def stop(self) -> None: ...

    async def post(self, request: Request, targets: Any) -> list[PostResult]:
        return [PostResult(target=t) for t in targets]

    async def update(self, request: Request) -> None:
        self.updated.append(request.state.value)

    async def remind(self, request: Request, targets: Any) -> None: ...

    def http_routes(self) -> list[Any]:
        return []

    def owns(self, target: str) -> bool:
        return target.startswith(f"{self.name}:")


class FreshReader(CopyKeeper):
    """A channel whose pages read requests fresh (the web inbox): nothing to update."""

    updates_copies = False


async def test_a_close_updates_kept_copies_only(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    await store.open()
    kept, fresh = CopyKeeper("kept"), FreshReader("fresh")
    service = BridgeService(store, Router([], Route(name="default", notify=["kept:a", "fresh:b"])),
                            SecretBox("k" * 40), ManualClock(), channels=[kept, fresh])
    try:
        request, _ = await service.submit(RequestIn.model_validate(
            {"title": "Deploy?", "questions": [QUESTIONS[0]]}), source="webhook")
        await service.drain()  # posted to both
        assert {p.channel for p in await store.list_posts(request.id)} == {"kept", "fresh"}
        await service.answer(request.id, Responder(platform="kept", user_id="a", name="ana"), {"ok": "yes"},
                             via="kept")
        await service.drain()
    finally:
        await store.close()
    assert kept.updated == ["answered"] and fresh.updated == []
    assert service.updating_channels() == [kept]
