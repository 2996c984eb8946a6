"""Store contract: a request created with its copies (a posting that sends nothing, as the web
inbox's) stores the request, its copies and its events in order in one transaction; a repeat
of its external_id stores none of them. The service takes that path for a channel that posts
in the store, and posts after the create for one that sends. SQLite and PostgreSQL (see conftest.py)."""

from __future__ import annotations

from collections.abc import Sequence

from bridge.audit.verify import verify_store
from bridge.config import Route
from bridge.crypto import SecretBox
from bridge.models import Post, Request, RequestIn, RequestState
from bridge.ports import PostResult
from bridge.router import Router
from bridge.service import BridgeService
from bridge.store import Store
from tests.harness import ManualClock
from tests.store.helpers import at, make_event, make_request

BODY = {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}]}


def web_copy(request_id: str) -> Post:
    return Post(request_id=request_id, channel="web", target="web", ref={"path": f"/inbox/r/{request_id}"}, at=at(0))


async def test_a_request_is_stored_with_its_copies_and_events_in_order(store: Store) -> None:
    request = make_request(external_id="job-1", state=RequestState.posted)
    created = make_event(request.id, "created", 0, actor="webhook")
    posted = make_event(request.id, "posted", 0, actor="", targets=["web"])
    assert await store.create_request(request, created, posts=[web_copy(request.id)],
                                      events_after=[posted]) == (request, True)
    stored = await store.get_request(request.id)
    assert stored is not None and stored.state is RequestState.posted
    assert [(p.channel, p.target, p.ref, p.ok) for p in await store.list_posts(request.id)] == [
        ("web", "web", {"path": f"/inbox/r/{request.id}"}, True)]
    events = await store.list_events(request.id)
    assert [(e.kind, e.data) for e in events] == [("created", {}), ("posted", {"targets": ["web"]})]
    assert events[0].id < events[1].id
    assert (await store.count_by_state()).get("posted") == 1
    report = await verify_store(store)
    assert report.ok, report.problems
    assert report.checked == 2


async def test_a_repeat_of_its_external_id_stores_no_copy_and_no_event(store: Store) -> None:
    first = make_request(external_id="job-1", state=RequestState.posted)
    await store.create_request(first, make_event(first.id, "created"), posts=[web_copy(first.id)],
                               events_after=[make_event(first.id, "posted")])
    again = make_request(external_id="job-1", state=RequestState.posted)
    found, created = await store.create_request(again, make_event(again.id, "created"), posts=[web_copy(again.id)],
                                                events_after=[make_event(again.id, "posted")])
    assert not created and found.id == first.id
    assert await store.get_request(again.id) is None
    assert await store.list_posts(again.id) == []
    assert await store.list_events(again.id) == []
    assert len(await store.list_posts(first.id)) == 1
    assert [e.kind for e in await store.list_events(first.id)] == ["created", "posted"]


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


async def test_the_service_stores_an_inbox_post_with_the_create_and_posts_a_sending_one_after(
        store: Store) -> None:
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
