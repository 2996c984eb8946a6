"""Store contract: an external_id is its creator's own (two creators never meet, an older
database is migrated to that), and the copies of a request closed while they went out are
kept without a `posted` event after the close (decided atomically with the close).

Every test runs against SQLite and PostgreSQL (see conftest.py) unless marked."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from bridge.models import OPEN_STATES, Post, RequestState
from bridge.store import Store
from bridge.store.postgres import PostgresStore
from tests.harness import wait_for
from tests.store.conftest import Backend
from tests.store.helpers import at, make_event, make_request


async def test_external_ids_are_their_creators_own(store: Store) -> None:
    mine = make_request(external_id="job-1", created_by="api:agent")
    theirs = make_request(external_id="job-1", created_by="api:other")
    engine = make_request(external_id="job-1")
    for request in (mine, theirs, engine):
        assert await store.create_request(request) == (request, True)
    again, created = await store.create_request(make_request(external_id="job-1", created_by="api:agent"))
    assert not created and again.id == mine.id
    assert await store.find_by_external_id("webhook", "job-1", "api:other") == theirs
    assert await store.find_by_external_id("webhook", "job-1") == engine
    assert await store.find_by_external_id("webhook", "job-1", "api:nobody") is None


async def test_an_older_database_keys_its_external_ids_by_creator(backend: Backend) -> None:
    store = await backend.open_store()
    old = make_request(external_id="job-1", created_by="api:agent")
    await store.create_request(old)
    await store.close()
    # the database as a bridge before created_by left it
    await backend.sql("DROP INDEX ux_requests_creator_external")
    await backend.sql("ALTER TABLE requests DROP COLUMN created_by")
    await backend.sql("CREATE UNIQUE INDEX ux_requests_external ON requests(source, external_id) "
                      "WHERE external_id IS NOT NULL")
    await backend.sql("UPDATE meta SET value='1' WHERE key='schema_version'")
    store = await backend.open_store()
    try:
        found, created = await store.create_request(make_request(external_id="job-1", created_by="api:agent"))
        assert not created and found.id == old.id  # the stored creator was read back from the row
        other = make_request(external_id="job-1", created_by="api:other")
        assert await store.create_request(other) == (other, True)
    finally:
        await store.close()


async def test_copies_of_a_closed_request_are_kept_without_events(store: Store) -> None:
    request = make_request()
    await store.create_request(request)
    await store.transition(request.id, OPEN_STATES, RequestState.cancelled,
                           event=make_event(request.id, "cancelled", 1), now=at(1))
    copy = Post(request_id=request.id, channel="telegram", target="telegram:42", ref={"message_id": 9}, at=at(2))
    assert await store.record_posts(request.id, [copy], [make_event(request.id, "posted", 2)], now=at(2)) is None
    assert [p.target for p in await store.list_posts(request.id)] == ["telegram:42"]  # kept: it is updated
    assert [e.kind for e in await store.list_events(request.id)] == ["cancelled"]
    stored = await store.get_request(request.id)
    assert stored is not None and stored.state is RequestState.cancelled


@pytest.mark.postgres
async def test_a_posting_waits_for_a_close_in_flight_and_adds_no_event(postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    await store.open()
    try:
        request = make_request()
        await store.create_request(request)
        closing = await asyncpg.connect(postgres_url)
        try:
            txn = closing.transaction()
            await txn.start()  # a cancel in flight: row updated, its event written, not yet committed
            await closing.execute("UPDATE requests SET state='cancelled' WHERE id=$1", request.id)
            await closing.execute("INSERT INTO events (request_id, at, kind, actor, data) "
                                  "VALUES ($1, $2, 'cancelled', 'test', '{}')", request.id, at(1))
            copy = Post(request_id=request.id, channel="slack", target="slack:#ops", ref={"ts": "1"}, at=at(2))
            posting = asyncio.create_task(
                store.record_posts(request.id, [copy], [make_event(request.id, "posted", 2)], now=at(2)))
            await wait_for(lambda: closing.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted"), 10)
            assert not posting.done()
            await txn.commit()
            assert await asyncio.wait_for(posting, 10) is None
        finally:
            await closing.close()
        assert [e.kind for e in await store.list_events(request.id)] == ["cancelled"]
        assert [p.target for p in await store.list_posts(request.id)] == ["slack:#ops"]
    finally:
        await store.close()

