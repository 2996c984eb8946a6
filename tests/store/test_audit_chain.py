"""The events' hash chain (`bridge.store.chain`, `bridge.audit.verify`): a clean store
verifies; an event edited, deleted, reordered, inserted or cut off behind the bridge's back
is found at its place; retention leaves a checkpoint the rest verifies from; two stores
on one database (replicas) make one chain. SQLite and PostgreSQL (see conftest.py)."""

from __future__ import annotations

import asyncio

from bridge.audit.verify import Tamper, verify_store
from bridge.models import OPEN_STATES, Event, RequestState
from bridge.store import Store
from bridge.store.chain import GENESIS
from bridge.store.transactions import AddEvents, Txn
from tests.store.conftest import Backend
from tests.store.helpers import at, make_request


async def some_history(store: Store, requests: int = 3, events: int = 3) -> list[str]:
    ids = []
    for i in range(requests):
        request = make_request(created=i, state=RequestState.posted)
        await store.create_request(request, Event(id=0, request_id=request.id, at=at(i), kind="created",
                                                  actor="api:ci", data={"title": "Deploy ✓", "n": i}))
        for j in range(events):
            await store.add_event(request.id, "reminded", "bridge", {"to": ["slack:U1"], "j": j}, at(i + j))
        ids.append(request.id)
    return ids


async def cancel(store: Store, request_id: str) -> None:
    await store.transition(request_id, OPEN_STATES, RequestState.cancelled, now=at(100),
                           event=Event(id=0, request_id=request_id, at=at(100), kind="cancelled", actor="api:ci",
                                       data={}))


async def rows(backend: Backend) -> list[tuple[int, int]]:
    """(id, seq) of every event, in chain order."""
    return [(int(r[0]), int(r[1])) for r in await backend.sql("SELECT id, seq FROM events ORDER BY seq")]


async def test_a_clean_store_verifies_and_its_head_is_the_last_event(store: Store, backend: Backend) -> None:
    await some_history(store)
    report = await verify_store(store)
    assert report.ok, report.problems
    assert report.checked == 12
    assert report.state.seq == 12
    last = await backend.sql("SELECT hash FROM events ORDER BY seq DESC LIMIT 1")
    assert report.state.hash == last[0][0] != GENESIS


async def test_an_edited_event_is_named(store: Store, backend: Backend) -> None:
    await some_history(store)
    victim, seq = (await rows(backend))[5]
    await backend.sql("UPDATE events SET data='{\"to\": [\"slack:U2\"]}' WHERE id=$1", victim)
    report = await verify_store(store)
    assert [(p.what, p.event_id, p.seq) for p in report.problems or []] == [(Tamper.edited, victim, seq)]


async def test_an_edited_actor_or_time_is_named(store: Store, backend: Backend) -> None:
    await some_history(store)
    first, second = (await rows(backend))[2:4]
    await backend.sql("UPDATE events SET actor='slack:U999' WHERE id=$1", first[0])
    await backend.sql("UPDATE events SET kind='answered' WHERE id=$1", second[0])
    report = await verify_store(store)
    assert [(p.what, p.event_id) for p in report.problems or []] == [(Tamper.edited, first[0]),
                                                                     (Tamper.edited, second[0])]


async def test_a_deleted_event_is_named_by_the_one_after_it(store: Store, backend: Backend) -> None:
    ids = await some_history(store)
    chain = await rows(backend)
    await backend.sql("DELETE FROM events WHERE id=$1", chain[4][0])
    report = await verify_store(store)
    problems = report.problems or []
    assert [(p.what, p.event_id) for p in problems] == [(Tamper.deleted, chain[5][0])]
    assert f"#{chain[4][1]}" in problems[0].detail
    assert problems[0].request_id == ids[1]


async def test_reordered_events_are_named(store: Store, backend: Backend) -> None:
    await some_history(store)
    chain = await rows(backend)
    (a, a_seq), (b, b_seq) = chain[6], chain[7]
    await backend.sql("UPDATE events SET seq=-1 WHERE id=$1", a)
    await backend.sql("UPDATE events SET seq=$1 WHERE id=$2", a_seq, b)
    await backend.sql("UPDATE events SET seq=$1 WHERE id=$2", b_seq, a)
    report = await verify_store(store)
    problems = report.problems or []
    assert {p.what for p in problems} == {Tamper.reordered}
    assert {a, b} <= {p.event_id for p in problems}


async def test_truncated_events_are_reported_at_the_end(store: Store, backend: Backend) -> None:
    await some_history(store)
    chain = await rows(backend)
    await backend.sql("DELETE FROM events WHERE seq > $1", chain[8][1])
    report = await verify_store(store)
    problems = report.problems or []
    assert [p.what for p in problems] == [Tamper.truncated]
    assert problems[0].seq == chain[9][1] and "3 event(s)" in problems[0].detail


async def test_an_event_inserted_behind_the_bridge_is_named(store: Store, backend: Backend) -> None:
    ids = await some_history(store)
    if backend.kind == "postgres":  # as an intruder would: with the chain's trigger off
        await backend.sql("ALTER TABLE events DISABLE TRIGGER tr_events_chain")
    await backend.sql("INSERT INTO events (request_id, at, kind, actor, data) VALUES ($1, $2, 'answered', "
                      "'slack:U1', '{}')", ids[0], at(0) if backend.kind == "postgres" else at(0).isoformat())
    report = await verify_store(store)
    problems = report.problems or []
    assert [(p.what, p.request_id) for p in problems] == [(Tamper.inserted, ids[0])]


async def test_pruning_leaves_a_checkpoint_the_rest_verifies_from(store: Store, backend: Backend) -> None:
    ids = await some_history(store, requests=4)  # events #1..#16
    for request_id in ids[:3]:  # #17..#19
        await cancel(store, request_id)
    kept = make_request(created=50, state=RequestState.posted)  # open: kept
    await store.create_request(kept, Event(id=0, request_id=kept.id, at=at(50), kind="created", actor="api:ci",
                                           data={}))
    assert await store.prune_closed(at(1000)) == 3
    report = await verify_store(store)
    assert report.ok, report.problems
    assert report.state.cut_seq == 12  # the first three requests' first events were a prefix: cut...
    assert await store.list_events(ids[0]) == []
    retired = await backend.sql("SELECT seq FROM events WHERE kind='~retired' ORDER BY seq")
    assert [r[0] for r in retired] == [17, 18, 19]  # ...their cancels come after kept events: links for now
    await cancel(store, ids[3])
    await cancel(store, kept.id)
    assert await store.prune_closed(at(1000)) == 2
    report = await verify_store(store)
    assert report.ok, report.problems
    assert (await backend.sql("SELECT count(*) FROM events"))[0][0] == 0
    assert report.state.cut_seq == report.state.seq


async def test_after_pruning_tampering_is_still_found(store: Store, backend: Backend) -> None:
    ids = await some_history(store, requests=3)
    await cancel(store, ids[0])
    assert await store.prune_closed(at(1000)) == 1
    victim = (await backend.sql("SELECT id FROM events WHERE kind='reminded' ORDER BY seq LIMIT 1"))[0][0]
    await backend.sql("UPDATE events SET data='{}' WHERE id=$1", victim)
    report = await verify_store(store)
    assert [(p.what, p.event_id) for p in report.problems or []] == [(Tamper.edited, victim)]


async def test_two_stores_on_one_database_make_one_chain(backend: Backend) -> None:
    first, second = await backend.open_store(), await backend.open_store()
    try:
        await asyncio.gather(some_history(first, requests=4), some_history(second, requests=4))
        report = await verify_store(first)
        assert report.ok, report.problems
        assert report.checked == report.state.seq == 32
    finally:
        await first.close()
        await second.close()


async def test_stores_taking_turns_on_one_database_keep_one_chain(backend: Backend) -> None:
    """Each store appends after the other wrote (the daemon and the CLI): none appends from a
    head it remembered from before the other's write."""
    first, second = await backend.open_store(), await backend.open_store()
    try:
        for turn in range(3):
            await some_history(first if turn % 2 == 0 else second, requests=1, events=1)
        report = await verify_store(second)
        assert report.ok, report.problems
        assert report.checked == report.state.seq == 6
    finally:
        await first.close()
        await second.close()


async def test_a_failing_transaction_among_concurrent_ones_leaves_the_chain_whole(store: Store) -> None:
    [request_id] = await some_history(store, requests=1, events=0)

    def appends_then_fails() -> Txn[None]:
        yield AddEvents((Event(id=0, request_id=request_id, at=at(5), kind="note", actor="x", data={}),))
        raise ValueError("refused after appending")

    async def note(n: int) -> None:
        await store.add_event(request_id, "reminded", "bridge", {"n": n}, at(n))

    results = await asyncio.gather(note(1), store.transact(appends_then_fails()), note(2), note(3),
                                   return_exceptions=True)
    assert [type(r).__name__ for r in results] == ["NoneType", "ValueError", "NoneType", "NoneType"]
    await note(4)
    report = await verify_store(store)
    assert report.ok, report.problems
    assert report.checked == report.state.seq == 5
    assert [e.kind for e in await store.list_events(request_id)].count("note") == 0


async def test_a_store_from_before_the_chain_is_chained_once_in_written_order(backend: Backend) -> None:
    store = await backend.open_store()
    try:
        await some_history(store, requests=2)
    finally:
        await store.close()
    if backend.kind == "postgres":
        await backend.sql("DROP TRIGGER tr_events_chain ON events")
        await backend.sql("DELETE FROM meta WHERE key='schema_digest'")
    await backend.sql("DROP INDEX ix_events_seq")
    for column in ("seq", "prev_hash", "hash"):
        await backend.sql(f"ALTER TABLE events DROP COLUMN {column}")
    await backend.sql("DROP TABLE audit_chain")
    await backend.sql("UPDATE meta SET value='2' WHERE key='schema_version'")
    store = await backend.open_store()  # a schema-2 database: migrated and chained
    try:
        report = await verify_store(store)
        assert report.ok, report.problems
        assert report.checked == report.state.seq == 8
        chain = await rows(backend)
        assert [seq for _id, seq in chain] == list(range(1, 9))
        assert [event_id for event_id, _seq in chain] == sorted(event_id for event_id, _seq in chain)
        await some_history(store, requests=1)  # and new events join the same chain
        assert (await verify_store(store)).state.seq == 12
    finally:
        await store.close()
    assert (await backend.sql("SELECT value FROM meta WHERE key='schema_version'"))[0][0] == "3"
