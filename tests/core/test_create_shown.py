"""A request shown only in the web inbox is stored `posted` with its copy and its events in
the create's own transaction (nothing is left to send); one that a sending channel shows, or
that a rule may decide first, is stored `pending` and posted after, as before."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import httpx

from bridge.audit.verify import verify_store
from bridge.config import Route
from bridge.crypto import SecretBox
from bridge.models import Request, RequestIn, RequestState
from bridge.ports import PostResult
from bridge.router import Router
from bridge.service import BridgeService
from bridge.store.sqlite import SQLiteStore
from tests.harness import ManualClock, running_bridge

BODY = {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}]}


async def test_a_create_shown_in_the_inbox_is_answered_posted(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        created = await client.post("/v1/requests", json={**BODY, "external_id": "run-1"})
        assert created.status_code == 201 and created.json()["state"] == "posted"
        request_id = created.json()["id"]
        assert not bridge.service._tasks  # nothing posts in the background
        posts = await bridge.store.list_posts(request_id)
        assert [(p.channel, p.target, p.ok, p.ref) for p in posts] == [
            ("web", "web", True, {"path": f"/inbox/r/{request_id}"})]
        events = (await client.get(f"/v1/requests/{request_id}/events")).json()
        kinds = [e["kind"] for e in (events["events"] if isinstance(events, dict) else events)]
        assert kinds == ["created", "posted"]
        assert (await verify_store(bridge.store)).ok
        again = await client.post("/v1/requests", json={**BODY, "external_id": "run-1"})
        assert again.status_code == 200 and again.json()["state"] == "posted"
        assert len(await bridge.store.list_posts(request_id)) == 1  # a retry adds no copy
        metrics = (await client.get("/metrics")).text
        assert 'hitl_posts_total{channel="web",result="ok"} 1.0' in metrics


class Shelf:
    """A channel whose copy is only the stored record (as the web inbox)."""

    name = "shelf"
    prefixes = ("shelf",)

    def owns(self, target: str) -> bool:
        return target == "shelf"

    def copies_in_store(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        return [PostResult(target=t, ref={"on": "shelf"}) for t in targets]

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        return self.copies_in_store(request, targets)


class Sender:
    """A channel that sends (as Slack or Telegram would): posted after the create."""

    name = "sender"
    prefixes = ("sender:",)

    def __init__(self) -> None:
        self.sent: list[str] = []

    def owns(self, target: str) -> bool:
        return target.startswith("sender:")

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        self.sent.extend(targets)
        return [PostResult(target=t, ref={"message": 1}) for t in targets]


async def test_a_sending_channel_still_posts_after_the_create(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    await store.open()
    sender = Sender()
    routes = [Route(name="mixed", match={"labels.team": "ops"}, notify=["shelf", "sender:1"])]
    service = BridgeService(store, Router(routes, Route(name="default", notify=["shelf"])), SecretBox("k" * 40),
                            ManualClock(), channels=[Shelf(), sender])  # type: ignore[list-item]
    try:
        shown, _ = await service.submit(RequestIn.model_validate(BODY), source="webhook")
        assert shown.state is RequestState.posted and not service._tasks
        assert [e.kind for e in await store.list_events(shown.id)] == ["created", "posted"]
        mixed, _ = await service.submit(RequestIn.model_validate({**BODY, "labels": {"team": "ops"}}),
                                        source="webhook")
        assert mixed.state is RequestState.pending
        await service.drain()
        assert sender.sent == ["sender:1"]
        assert {p.target for p in await store.list_posts(mixed.id)} == {"shelf", "sender:1"}
        assert [e.kind for e in await store.list_events(mixed.id)] == ["created", "posted"]
        stored = await store.get_request(mixed.id)
        assert stored is not None and stored.state is RequestState.posted
        assert (await verify_store(store)).ok
    finally:
        await service.drain()
        await store.close()
