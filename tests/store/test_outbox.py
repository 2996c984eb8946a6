"""Store contract, outbox: enqueue/claim with a lease/retry/dead/done, replicas, restarts.

Every test runs against SQLite and PostgreSQL (see conftest.py)."""

from __future__ import annotations

import asyncio

from bridge.models import RequestState
from bridge.store import OutboxItem, OutboxStats, Store
from tests.store.conftest import Backend
from tests.store.helpers import at, make_answer, make_event, make_request

OPEN = frozenset({RequestState.pending, RequestState.posted})


async def test_claim_takes_due_items_in_due_order_and_leases_them(store: Store) -> None:
    late = await store.enqueue("r_late", "answered", at(30))
    early = await store.enqueue("r_early", "expired", at(10))
    future = await store.enqueue("r_future", "cancelled", at(500))
    assert await store.next_outbox_due() == at(10)
    assert await store.claim_due(at(5), limit=10, lease_s=60) == []
    claimed = await store.claim_due(at(40), limit=10, lease_s=60)
    assert [(i.id, i.request_id, i.state, i.due_at) for i in claimed] == [
        (early, "r_early", "expired", at(10)), (late, "r_late", "answered", at(30))]
    assert all(i.attempts == 0 and not i.dead and i.last_error is None for i in claimed)
    # leased: nobody takes them again until the lease has passed
    assert await store.claim_due(at(41), limit=10, lease_s=60) == []
    assert await store.claim_due(at(99), limit=10, lease_s=60) == []
    assert await store.next_outbox_due() == at(100)
    again = await store.claim_due(at(100), limit=10, lease_s=60)
    assert sorted(i.id for i in again) == sorted([early, late])  # same due time: any order
    assert {i.id for i in await store.list_outbox()} == {early, late, future}


async def test_claim_respects_the_limit(store: Store) -> None:
    ids = [await store.enqueue(f"r_{n}", "answered", at(n)) for n in range(5)]
    assert [i.id for i in await store.claim_due(at(10), limit=2, lease_s=30)] == ids[:2]
    assert [i.id for i in await store.claim_due(at(10), limit=2, lease_s=30)] == ids[2:4]
    assert [i.id for i in await store.claim_due(at(10), limit=2, lease_s=30)] == ids[4:]
    assert await store.claim_due(at(10), limit=2, lease_s=30) == []


async def test_retry_dead_and_done(store: Store) -> None:
    retried = await store.enqueue("r_a", "answered", at(0))
    killed = await store.enqueue("r_b", "answered", at(0))
    finished = await store.enqueue("r_c", "answered", at(0))
    assert len(await store.claim_due(at(1), limit=10, lease_s=30)) == 3
    await store.outbox_retry(retried, attempts=1, due_at=at(5), error="callback answered 503")
    await store.outbox_dead(killed, error="gave up after 24h: callback answered 410")
    await store.outbox_done(finished)
    [pending] = await store.list_outbox(dead=False)
    assert (pending.id, pending.attempts, pending.due_at, pending.last_error) == (
        retried, 1, at(5), "callback answered 503")
    [dead] = await store.list_outbox(dead=True)
    assert dead.id == killed and dead.dead and dead.last_error == "gave up after 24h: callback answered 410"
    assert {i.id for i in await store.list_outbox()} == {retried, killed}  # done entries are gone
    assert await store.list_outbox(request_id="r_c") == []
    assert [i.id for i in await store.list_outbox(request_id="r_b", dead=True)] == [killed]
    # dead and done entries are never claimed again, however late it gets
    assert [i.id for i in await store.claim_due(at(10_000), limit=10, lease_s=30)] == [retried]
    assert await store.next_outbox_due() == at(10_030)
    await store.outbox_done(retried)
    assert await store.next_outbox_due() is None
    assert await store.claim_due(at(20_000), limit=10, lease_s=30) == []


async def test_replicas_never_claim_the_same_item(backend: Backend, store: Store) -> None:
    expected = {await store.enqueue(f"r_{n}", "answered", at(n % 7)) for n in range(60)}
    replicas = [store, *[await backend.open_store() for _ in range(2)]]
    claims: list[list[OutboxItem]] = []

    async def worker(replica: Store) -> None:
        while True:
            batch = await replica.claim_due(at(100), limit=4, lease_s=3600)
            if not batch:
                return
            claims.append(batch)

    try:
        await asyncio.gather(*(worker(r) for r in replicas for _ in range(3)))
    finally:
        for replica in replicas[1:]:
            await replica.close()
    taken = [item.id for batch in claims for item in batch]
    assert len(taken) == len(set(taken)) == 60
    assert set(taken) == expected


async def test_restart_keeps_requests_answers_and_pending_deliveries(backend: Backend, store: Store) -> None:
    request = make_request(state=RequestState.posted, external_id="job-1", deadline=at(7200))
    await store.create_request(request)
    answer = make_answer("U3")
    await store.transition(request.id, OPEN, RequestState.answered, answer=answer, enqueue="answered", now=at(60))
    retry_id = await store.enqueue("r_other", "expired", at(30))
    await store.outbox_retry(retry_id, attempts=3, due_at=at(90), error="timeout")
    await store.kv_put("telegram", "cb:1", {"request": request.id})
    await store.close()

    reopened = await backend.open_store()
    try:
        stored = await reopened.get_request(request.id)
        assert stored is not None and stored.state is RequestState.answered and stored.answer == answer
        assert await reopened.find_by_external_id("webhook", "job-1") == stored
        pending = await reopened.list_outbox()
        assert [(i.request_id, i.state, i.attempts) for i in pending] == [
            (request.id, "answered", 0), ("r_other", "expired", 3)]
        claimed = await reopened.claim_due(at(100), limit=10, lease_s=30)
        assert [i.request_id for i in claimed] == [request.id, "r_other"]
        assert await reopened.kv_get("telegram", "cb:1") == {"request": request.id}
    finally:
        await reopened.close()


async def answered(store: Store, source: str = "webhook", **extra: object) -> tuple[str, int]:
    """A request answered with its write-back queued: (request id, outbox entry id)."""
    request = make_request(state=RequestState.posted, source=source, **extra)  # type: ignore[arg-type]
    await store.create_request(request)
    await store.transition(request.id, OPEN, RequestState.answered, answer=make_answer(), enqueue="answered",
                           now=at(60))
    [item] = await store.list_outbox(request_id=request.id)
    return request.id, item.id


async def test_finish_delivery_marks_the_entry_done_and_the_request_delivered_at_once(store: Store) -> None:
    rid, item = await answered(store)
    event = make_event(rid, "delivered", 70, outcome="answered", attempts=1)
    moved = await store.finish_delivery(item, rid, event=event, now=at(70))
    assert moved is not None and moved.state is RequestState.delivered and moved.updated_at == at(70)
    stored = await store.get_request(rid)
    assert stored == moved
    assert await store.list_outbox(request_id=rid) == []
    assert [e.kind for e in await store.list_events(rid)] == ["delivered"]
    # a secret not kept: the answer is replaced in the same transaction
    rid2, item2 = await answered(store)
    forgotten = make_answer(value="[not kept]")
    moved2 = await store.finish_delivery(item2, rid2, event=make_event(rid2, "delivered"), now=at(80),
                                         answer=forgotten)
    assert moved2 is not None and moved2.answer == forgotten
    # a cancellation (no answer) is delivered but stays cancelled
    cancelled = make_request(state=RequestState.posted)
    await store.create_request(cancelled)
    await store.transition(cancelled.id, OPEN, RequestState.cancelled, enqueue="cancelled", now=at(5))
    [entry] = await store.list_outbox(request_id=cancelled.id)
    assert await store.finish_delivery(entry.id, cancelled.id, event=make_event(cancelled.id, "delivered"),
                                       now=at(9)) is None
    still = await store.get_request(cancelled.id)
    assert still is not None and still.state is RequestState.cancelled
    assert await store.list_outbox(request_id=cancelled.id) == []


async def test_heal_moves_only_requests_whose_delivery_succeeded(store: Store) -> None:
    stuck, stuck_item = await answered(store)
    await store.outbox_done(stuck_item)  # what the old two-step success left after a crash
    waiting, _ = await answered(store)  # its delivery is still pending: not touched
    redelivering, old_item = await answered(store)
    await store.outbox_done(old_item)  # a superseded entry, and a new one queued: not touched
    await store.enqueue(redelivering, "answered", at(90))
    assert await store.heal_deliveries(at(100)) == [stuck]
    healed = await store.get_request(stuck)
    assert healed is not None and healed.state is RequestState.delivered
    assert [e.data for e in await store.list_events(stuck) if e.kind == "delivered"] == [
        {"outcome": "answered", "healed": True}]
    for rid in (waiting, redelivering):
        request = await store.get_request(rid)
        assert request is not None and request.state is RequestState.answered
    assert await store.heal_deliveries(at(200)) == []


async def test_outbox_stats_are_counted_by_source(store: Store) -> None:
    assert await store.outbox_stats() == OutboxStats(pending=0, dead=0, failing={})
    for n in range(3):
        _, item = await answered(store, source="webhook", external_id=f"w{n}")
        if n < 2:
            await store.outbox_retry(item, attempts=n + 1, due_at=at(500), error="503")
    _, delta_item = await answered(store, source="delta")
    await store.outbox_retry(delta_item, attempts=4, due_at=at(500), error="disk")
    _, dead = await answered(store, source="delta", external_id="d2")
    await store.outbox_dead(dead, error="gave up")
    _, done = await answered(store, source="delta", external_id="d3")
    await store.outbox_done(done)
    assert await store.outbox_stats() == OutboxStats(pending=4, dead=1, failing={"webhook": 2, "delta": 1})
