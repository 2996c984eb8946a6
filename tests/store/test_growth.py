"""Store contract, growth: the compact timer rows follow every change of a request, paging
returns every row once, the kept counts match the rows, pruning removes only what it
should, and an older database gets all of it. SQLite and PostgreSQL (see conftest.py)."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

from bridge.models import OPEN_STATES, Post, RequestState, TimerStep
from bridge.store import Store, Vote
from bridge.store.base import TimerRow
from bridge.store.query import RequestQuery
from bridge.store.sqlite import SQLiteStore
from bridge.timers import next_instant
from tests.store.conftest import Backend
from tests.store.helpers import at, make_answer, make_event, make_request
from tests.store.test_schema_votes_kv import as_before_compact_timers


async def rows(store: Store, limit: int = 5000) -> list[TimerRow]:
    """Every timer row, read page by page (`limit` per page)."""
    out: list[TimerRow] = []
    after: tuple[datetime, str] | None = None
    while True:
        page = await store.timer_rows(after=after, limit=limit)
        out.extend(page)
        if len(page) < limit:
            return out
        after = (page[-1].at, page[-1].request_id)


async def timers_of(store: Store) -> dict[str, tuple[datetime, bool]]:
    return {r.request_id: (r.at, r.resume) for r in await rows(store)}


async def expected_timers(store: Store, ids: list[str]) -> dict[str, tuple[datetime, bool]]:
    """What the rows should say, from the requests as stored (the scheduler's own arithmetic)."""
    out = {}
    for request_id in ids:
        request = await store.get_request(request_id)
        assert request is not None
        instant = next_instant(request)
        if instant is not None:
            out[request_id] = (instant, request.escalation_level > 0 or bool(request.timer_steps))
    return out


async def test_timer_rows_follow_every_transition(store: Store) -> None:
    deadline = make_request(state=RequestState.posted, deadline=at(3600), next_reminder_at=at(600))
    answered = make_request(state=RequestState.posted, deadline=at(3600))
    cancelled = make_request(state=RequestState.pending, deadline=at(3600))
    expired = make_request(state=RequestState.posted, deadline=at(60))
    escalated = make_request(state=RequestState.posted, next_escalation_at=at(300))
    snoozed = make_request(state=RequestState.posted, deadline=at(900))
    untimed = make_request(state=RequestState.posted)
    made = [deadline, answered, cancelled, expired, escalated, snoozed, untimed]
    ids = [r.id for r in made]
    for request in made:
        await store.create_request(request, make_event(request.id, "created"))
    assert await timers_of(store) == await expected_timers(store, ids)
    assert (await timers_of(store))[deadline.id] == (at(600), False)  # the reminder comes first
    assert untimed.id not in await timers_of(store)

    # a reminder sent: the next one is later
    await store.update_request(deadline.id, now=at(600), next_reminder_at=at(1200), reminders_sent=1)
    # answer, cancel, expire: no timer left
    await store.transition(answered.id, {RequestState.posted}, RequestState.answered, answer=make_answer(),
                           enqueue="answered", now=at(10))
    await store.transition(cancelled.id, OPEN_STATES, RequestState.cancelled, now=at(10))
    await store.transition(expired.id, OPEN_STATES, RequestState.expired, now=at(60))
    # escalate: a level reached and a step claimed → the row says "resume"
    step = TimerStep(id="escalate:1", kind="escalate", targets=["web"], lease_until=at(330))

    def escalate(request: object) -> bool:
        assert request is not None
        request.escalation_level = 1  # type: ignore[attr-defined]
        request.next_escalation_at = at(900)  # type: ignore[attr-defined]
        request.timer_steps = [step]  # type: ignore[attr-defined]
        return True

    await store.modify_request(escalated.id, escalate, now=at(300))
    # snooze: the deadline moves later
    await store.update_request(snoozed.id, now=at(100), deadline=at(7200))
    found = await timers_of(store)
    assert found == await expected_timers(store, ids)
    assert found[deadline.id] == (at(1200), False)
    assert found[escalated.id] == (at(330), True)
    assert found[snoozed.id] == (at(3600 * 2), False)
    assert {answered.id, cancelled.id, expired.id} & found.keys() == set()
    # the step done: no longer "resume" on the next restart... but the level reached still is
    await store.update_request(escalated.id, now=at(331), timer_steps=[])
    assert (await timers_of(store))[escalated.id] == (at(900), True)
    assert await store.timers_due(at(1000)) == [(escalated.id, at(900))]


async def test_timer_rows_page_in_instant_order_each_row_once(store: Store) -> None:
    made = [make_request(state=RequestState.posted, deadline=at(60 * (i % 7)) + timedelta(hours=1))
            for i in range(23)]  # several share an instant: the id breaks the tie
    for request in made:
        await store.create_request(request)
    await store.create_request(make_request(state=RequestState.delivered, deadline=at(5)))  # closed: no row
    paged = await rows(store, limit=4)
    assert [r.request_id for r in paged] == [r.request_id for r in await rows(store)]
    assert sorted(r.request_id for r in paged) == sorted(r.id for r in made)
    assert [(r.at, r.request_id) for r in paged] == sorted((r.at, r.request_id) for r in paged)


async def test_pages_return_every_request_once_newest_first(store: Store) -> None:
    states = [RequestState.pending, RequestState.posted, RequestState.answered, RequestState.cancelled]
    made = []
    for i in range(31):
        request = make_request(created=i // 3, state=states[i % len(states)],  # created_at ties
                               source="delta" if i % 5 == 0 else "webhook")
        await store.create_request(request)
        made.append(request)
    for query in (RequestQuery(), RequestQuery(states=tuple(OPEN_STATES)), RequestQuery(states=(states[2],)),
                  RequestQuery(states=tuple(OPEN_STATES), source="webhook")):
        everything = await store.find_requests(query, limit=1000)
        keyed = [r.id for page in [p async for p in store.pages(query, size=4)] for r in page]
        by_offset = [r.id for offset in range(0, 40, 4) for r in await store.find_requests(query, limit=4,
                                                                                           offset=offset)]
        expected = sorted((r for r in made if (not query.states or r.state in query.states)
                           and (query.source is None or r.source == query.source)),
                          key=lambda r: (r.created_at, r.id), reverse=True)
        assert [r.id for r in everything] == [r.id for r in expected]
        assert keyed == by_offset == [r.id for r in expected]


async def test_pages_skip_nothing_while_requests_change_state(store: Store) -> None:
    made = [make_request(created=i, state=RequestState.posted) for i in range(12)]
    for request in made:
        await store.create_request(request)
    seen = []
    async for page in store.pages(RequestQuery(states=tuple(OPEN_STATES)), size=5):
        for request in page:
            seen.append(request.id)
            await store.transition(request.id, OPEN_STATES, RequestState.cancelled, now=at(100))  # withdrawn
    assert sorted(seen) == sorted(r.id for r in made)


async def test_kept_counts_match_the_rows(store: Store) -> None:
    made = [make_request(created=i, state=RequestState.posted) for i in range(9)]
    for request in made:
        await store.create_request(request)
    await store.create_request(make_request(external_id="twin"))
    await store.create_request(make_request(external_id="twin"))  # a repeat: counted once
    for request in made[:3]:
        await store.transition(request.id, OPEN_STATES, RequestState.answered, answer=make_answer(), now=at(50))
    await store.update_request(made[3].id, now=at(50), title="renamed")  # no state change: same counts
    await store.add_vote(Vote(made[4].id, "web:local", "yes", "Local", at(60)))
    await store.add_vote(Vote(made[0].id, "web:local", "yes", "Local", at(60)))  # answered: not open
    assert await store.count_by_state() == {"pending": 1, "posted": 6, "answered": 3}
    counted = await store.count_requests(RequestQuery(states=tuple(OPEN_STATES), not_voted_by=("web:local",)))
    assert counted == {"pending": 1, "posted": 5}
    assert await store.count_requests(RequestQuery()) == {"pending": 1, "posted": 6, "answered": 3}
    assert await store.count_requests(RequestQuery(states=(RequestState.answered,))) == {"answered": 3}


async def test_prune_removes_only_closed_requests_whose_outcome_needs_nothing_more(store: Store,
                                                                                 backend: Backend) -> None:
    old = {state: make_request(created=0, state=RequestState.posted) for state in
           ("delivered", "cancelled", "expired", "failed")}
    for request in old.values():
        await store.create_request(request, make_event(request.id, "created"))
        await store.add_post(Post(request_id=request.id, channel="web", target="web", ref={}, ok=True, at=at(1)))
        await store.add_vote(Vote(request.id, "web:ana", "yes", "Ana", at(2)))
    await store.transition(old["delivered"].id, OPEN_STATES, RequestState.answered, answer=make_answer(),
                           enqueue="answered", now=at(10))
    [entry] = await store.list_outbox(request_id=old["delivered"].id)
    await store.finish_delivery(entry.id, old["delivered"].id, event=make_event(old["delivered"].id, "delivered"),
                                now=at(11))
    for state in ("cancelled", "expired", "failed"):
        await store.transition(old[state].id, OPEN_STATES, RequestState(state), now=at(10))
    kept = {
        "open": make_request(created=0, state=RequestState.posted, deadline=at(1)),
        "answered": make_request(created=0, state=RequestState.posted),  # write-back still waiting
        "dead": make_request(created=0, state=RequestState.posted),  # write-back gave up: undelivered
        "recent": make_request(created=0, state=RequestState.posted),  # closed after the cut-off
    }
    for request in kept.values():
        await store.create_request(request, make_event(request.id, "created"))
    await store.transition(kept["answered"].id, OPEN_STATES, RequestState.answered, answer=make_answer(),
                           enqueue="answered", now=at(10))
    await store.transition(kept["dead"].id, OPEN_STATES, RequestState.expired, enqueue="expired", now=at(10))
    [dead] = await store.list_outbox(request_id=kept["dead"].id)
    await store.outbox_dead(dead.id, error="410 gone")
    await store.transition(kept["recent"].id, OPEN_STATES, RequestState.cancelled, now=at(5000))

    assert await store.prune_closed(at(1000), limit=3) == 3  # in batches
    assert await store.prune_closed(at(1000), limit=3) == 1
    assert await store.prune_closed(at(1000), limit=3) == 0
    for request in old.values():
        assert await store.get_request(request.id) is None
        assert await store.list_events(request.id) == []
        assert await store.list_posts(request.id) == []
        assert await store.list_votes(request.id) == []
        assert await store.list_outbox(request_id=request.id) == []
    for request in kept.values():
        assert await store.get_request(request.id) is not None
        assert await store.list_events(request.id) != []
    assert await store.count_by_state() == {"posted": 1, "answered": 1, "expired": 1, "cancelled": 1}
    for table in ("events", "posts", "votes", "outbox"):
        orphans = await backend.sql(f"SELECT COUNT(*) FROM {table} t WHERE NOT EXISTS "
                                    "(SELECT 1 FROM requests r WHERE r.id = t.request_id)")
        assert orphans == [(0,)]


async def test_an_older_database_gets_timer_rows_and_counts_from_its_requests(backend: Backend) -> None:
    store = await backend.open_store()
    plain = make_request(state=RequestState.posted, deadline=at(600))
    escalated = make_request(state=RequestState.posted, next_escalation_at=at(900), escalation_level=1)
    stepped = make_request(state=RequestState.posted, deadline=at(900),
                           timer_steps=[TimerStep(id="remind:1", kind="remind", targets=["web"], lease_until=at(90))])
    closed = make_request(state=RequestState.cancelled, deadline=at(30))
    for request in (plain, escalated, stepped, closed):
        await store.create_request(request)
    await store.close()
    await as_before_compact_timers(backend)
    await backend.sql("DELETE FROM meta WHERE key='schema_digest'")  # as a release before them left it
    store = await backend.open_store()
    try:
        assert await timers_of(store) == {plain.id: (at(600), False), escalated.id: (at(900), True),
                                          stepped.id: (at(90), True)}
        assert await store.count_by_state() == {"posted": 3, "cancelled": 1}
        await store.create_request(make_request())  # the triggers count from now on
        assert await store.count_by_state() == {"pending": 1, "posted": 3, "cancelled": 1}
    finally:
        await store.close()
    store = await backend.open_store()  # migrating again changes nothing
    try:
        assert await store.count_by_state() == {"pending": 1, "posted": 3, "cancelled": 1}
    finally:
        await store.close()


async def test_sqlite_reads_see_each_acknowledged_write_and_never_wait_for_a_writer(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "bridge.db")
    await store.open()
    try:
        for i in range(20):  # read right after each acknowledged write: on the read connection, it is there
            request = make_request(created=i, state=RequestState.posted)
            await store.create_request(request)
            assert (await store.get_request(request.id)) == request
            await store.transition(request.id, OPEN_STATES, RequestState.cancelled, now=at(100))
            found = await store.get_request(request.id)
            assert found is not None and found.state is RequestState.cancelled
        assert await store.count_by_state() == {"cancelled": 20}
        # another process holds the write lock: a read still answers at once (WAL), a write waits
        holder = sqlite3.connect(tmp_path / "bridge.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE meta SET value=value WHERE key='schema_version'")
        try:
            blocked = asyncio.ensure_future(store.create_request(make_request(external_id="waits")))
            listed = await asyncio.wait_for(store.find_requests(RequestQuery(), limit=5), timeout=10)
            assert len(listed) == 5
            assert not blocked.done()
        finally:
            holder.execute("COMMIT")
            holder.close()
        await blocked
        assert await store.find_by_external_id("webhook", "waits") is not None
    finally:
        await store.close()
