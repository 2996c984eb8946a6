"""PostgreSQL change notifications handled a batch at a time (`bridge.store.pg_follow`), on a
real server: many notifications of one commit for many requests, a burst longer than a batch,
malformed and forged payloads among good ones, the listening connection lost while a burst
is held unread, and the timers of a batch armed on another replica with the earliest
instant. Each test has a schema of its own, dropped after. Nothing sleeps: every wait has a
deadline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import asyncpg
import pytest

from bridge.daemon import Daemon
from bridge.health import Health, Status
from bridge.notify import ChangeFeed, Waiter
from bridge.store.pg_follow import COMPONENT, Follower, channel_of
from bridge.store.postgres import PostgresStore
from tests.harness import ManualClock, wait_for
from tests.store.test_wake import WITHIN, cut_listening, follower_of, long_poll, replicas, returned
from tests.timing.helpers import answer, create

pytestmark = pytest.mark.postgres

INSERT = ("INSERT INTO requests (id, source, state, route, created_at, updated_at, body, deadline) "
          "SELECT id, 'test', $2, 'default', now(), now(), '{}', $3 FROM unnest($1::text[]) AS id")


@asynccontextmanager
async def following(url: str) -> AsyncIterator[tuple[PostgresStore, ChangeFeed, Follower, asyncpg.Connection]]:
    """A store whose follower reports to a real ChangeFeed, listening; and a writer connection."""
    store = PostgresStore(url)
    await store.open()
    health = Health()
    store.watch(health)
    feed = ChangeFeed()
    writer = await asyncpg.connect(store.options.dsn)
    try:
        store.follow(feed)
        follower = store.follower
        assert follower is not None
        await asyncio.wait_for(follower.connected.wait(), WITHIN)
        assert follower.coalescing  # asyncpg's transport is reachable: streams are read in batches
        yield store, feed, follower, writer
    finally:
        await writer.close()
        await store.close()


async def woken(waiters: list[Waiter]) -> None:
    await asyncio.wait_for(asyncio.gather(*waiters), WITHIN)


async def test_one_commit_of_many_changes_wakes_every_waiter_of_a_closed_request_in_few_passes(
        postgres_url: str) -> None:
    async with following(postgres_url) as (_store, feed, follower, writer):
        ids = [f"r-{n:04d}" for n in range(300)]
        await writer.execute(INSERT, ids, "pending", None)
        await wait_for(lambda: follower.handled >= 300, WITHIN)
        waiters = [feed.waiter(rid) for rid in ids for _ in range(2)]  # two waits on each
        version, passes = feed.version, follower.batches
        closing, staying = ids[:200], ids[200:]
        async with writer.transaction():  # one commit: its notifications arrive together
            await writer.execute("UPDATE requests SET state='cancelled' WHERE id = ANY($1::text[])", closing)
            await writer.execute("UPDATE requests SET state='posted' WHERE id = ANY($1::text[])", staying)
        await woken(waiters[:400])
        assert all(w.result() is None for w in waiters[:400])  # "read it again"
        await wait_for(lambda: follower.handled >= 600, WITHIN)
        assert not any(w.done() for w in waiters[400:])  # still open: a wait for a close goes on
        assert follower.batches - passes < 300  # a batch, not a pass per notification
        assert feed.version - version == follower.batches - passes  # live views: one move per pass
        assert feed.waiting_count() == 200  # two on each of the 100 still open


async def test_a_burst_longer_than_a_batch_is_handled_in_several_passes_and_loses_nothing(
        postgres_url: str) -> None:
    async with following(postgres_url) as (_store, feed, follower, writer):
        follower.batch = 7
        ids = [f"b-{n:04d}" for n in range(250)]
        waiters = [feed.waiter(rid) for rid in ids]
        passes = follower.batches
        await writer.execute(INSERT, ids, "cancelled", None)  # created closed: one commit, 250 notifications
        await woken(waiters)
        await wait_for(lambda: follower.handled == follower.received, WITHIN)
        assert follower.received == 250 and follower.batches - passes >= 250 // 7


async def test_malformed_and_forged_payloads_are_skipped_logged_and_cost_the_good_ones_nothing(
        postgres_url: str, caplog: pytest.LogCaptureFixture) -> None:
    async with following(postgres_url) as (_store, feed, follower, writer):
        schema = await writer.fetchval("SELECT current_schema()")
        channel = channel_of(str(schema))
        waiter = feed.waiter("good-1")
        bad = ["", "posted", "posted\tsoon\tr-1", "x" * 7990, "posted\t1e400\tr-2", "\t\t\t\t",
               "cancelled\tnan\tr-3",
               "posted\t\t\x01\\u12"]  # an id in pg_support's escaped form, cut short
        caplog.set_level(logging.WARNING, "hitl_bridge.store")
        async with writer.transaction():
            for payload in bad[:3]:
                await writer.execute("SELECT pg_notify($1, $2)", channel, payload)
            await writer.execute(INSERT, ["good-1"], "cancelled", None)
            for payload in bad[3:]:
                await writer.execute("SELECT pg_notify($1, $2)", channel, payload)
        await woken([waiter])
        await wait_for(lambda: follower.handled == follower.received == len(bad) + 1, WITHIN)
        # a forged "still open" after a real close in the same batch hides nothing
        late = feed.waiter("good-2")
        async with writer.transaction():
            await writer.execute(INSERT, ["good-2"], "cancelled", None)
            await writer.execute("SELECT pg_notify($1, $2)", channel, "posted\t\tgood-2")
        await woken([late])
        assert follower.malformed == 7  # "\t\t\t\t" is well formed: state "", no instant, id "\t\t"
        warnings = [r.getMessage() for r in caplog.records if "malformed change notification" in r.getMessage()]
        assert len(warnings) == 1 and len(warnings[0]) < 600  # said once, the payload cut short
        # a later batch with more of them is counted, not logged again (a flood stays out of the log)
        await writer.execute("SELECT pg_notify($1, 'nonsense')", channel)
        await wait_for(lambda: follower.malformed == 8, WITHIN)
        assert len([r for r in caplog.records if "malformed change notification" in r.getMessage()]) == 1
        assert follower.connected.is_set()  # still listening


async def test_a_connection_lost_with_a_burst_unread_loses_no_change(
        postgres_url: str, postgres_admin_url: str) -> None:
    """The follower holds its connection unread (as under a stream) while a burst closes half
    the waited requests and the connection is killed, then the other half closes while it is
    down: every waiter is woken, each notification it had been delivered is handled, and it
    listens again."""
    async with following(postgres_url) as (store, feed, follower, writer):
        follower.coalesce_s = follower.coalesce_waited_s = 1.0  # the next read a second after the one that held it
        follower.backoff = (0.5,)
        ids = [f"g-{n:04d}" for n in range(200)]
        await writer.execute(INSERT, ids, "pending", None)
        await wait_for(lambda: follower.handled >= 200, WITHIN)
        waiters = [feed.waiter(rid) for rid in ids]
        await wait_for(lambda: not follower.holding, WITHIN)  # the hold of that read is over
        await writer.execute(INSERT, ["primer"], "pending", None)  # read at once, then a hold begins
        await wait_for(lambda: follower.handled >= 201, WITHIN)
        assert follower.holding
        await writer.execute("UPDATE requests SET state='cancelled' WHERE id = ANY($1::text[])", ids[:100])
        await cut_listening(follower, postgres_admin_url)
        assert store.health is not None
        check = store.health.current(COMPONENT)
        assert check is not None and check.status is Status.degraded
        await writer.execute("UPDATE requests SET state='cancelled' WHERE id = ANY($1::text[])", ids[100:])
        await woken(waiters)  # the first half by notification or the catch-up, the second by the catch-up
        assert follower.handled == follower.received  # nothing delivered was dropped with the connection
        await wait_for(lambda: follower.connected.is_set(), WITHIN)
        assert follower.reconnects == 1
        check = store.health.current(COMPONENT)
        assert check is not None and check.status is Status.ok


async def test_the_timers_of_a_batch_are_armed_on_the_other_replica_with_the_earliest_instant(
        tmp_path: Path, postgres_url: str) -> None:
    clock = ManualClock()
    now = clock.now()
    async with replicas(tmp_path, postgres_url, clock) as (_a, b):
        follower = follower_of(b)
        writer = await asyncpg.connect(follower.dsn)
        try:
            later = [f"t-{n:03d}" for n in range(100)]
            async with writer.transaction():
                for n, rid in enumerate(later):  # +1 h … +100 h
                    await writer.execute(INSERT, [rid], "pending", now + timedelta(hours=n + 1))
                await writer.execute(INSERT, ["soonest"], "pending", now + timedelta(hours=5))
                await writer.execute(INSERT, ["dropped"], "pending", now + timedelta(minutes=1))
                # later in the same commit: re-armed sooner, and one closed (the latest of each counts)
                await writer.execute("UPDATE requests SET deadline=$2 WHERE id=$1", "soonest",
                                     now + timedelta(minutes=30))
                await writer.execute("UPDATE requests SET state='cancelled' WHERE id='dropped'")
            await wait_for(lambda: follower.handled >= 104, WITHIN)
        finally:
            await writer.close()
        index = b.scheduler.index
        assert index.instant_of("soonest") == (now + timedelta(minutes=30)).timestamp()
        assert index.instant_of("dropped") is None
        assert index.instant_of("t-099") == (now + timedelta(hours=100)).timestamp()
        assert b.scheduler.wakes_at == now + timedelta(minutes=30)
        # a forged instant for a real request is a hint: due, the timer re-reads its row and
        # acts on what is stored (nothing yet), and re-arms the stored instant
        rid = await create(b, timeout_s=7200)
        stored_at = b.scheduler.index.instant_of(rid)
        assert stored_at == (now + timedelta(hours=2)).timestamp()
        await forge(b, f"posted\t{(now + timedelta(minutes=1)).timestamp()}\t{rid}")
        await wait_for(lambda: b.scheduler.index.instant_of(rid) == (now + timedelta(minutes=1)).timestamp(), WITHIN)
        clock.advance(minutes=1)
        assert await b.scheduler.run_due() == 0  # nothing was due: nothing done
        assert b.scheduler.index.instant_of(rid) == stored_at


async def forge(daemon: Daemon, payload: str) -> None:
    """NOTIFY on the daemon's channel from outside, as anyone who can connect may."""
    conn = await asyncpg.connect(follower_of(daemon).dsn)
    try:
        await conn.execute("SELECT pg_notify($1, $2)", channel_of(str(await conn.fetchval("SELECT current_schema()"))),
                           payload)
    finally:
        await conn.close()


async def test_a_forged_close_does_not_end_a_long_poll_on_another_replica(tmp_path: Path,
                                                                         postgres_url: str) -> None:
    async with replicas(tmp_path, postgres_url) as (a, b):
        rid = await create(a)
        async with long_poll(b, rid) as poll:
            follower = follower_of(b)
            handled = follower.handled
            await forge(b, f"answered\t\t{rid}")  # says closed: the poll reads it again, sees it open
            await wait_for(lambda: follower.handled > handled, WITHIN)
            await wait_for(lambda: poll.done() or b.service.changes.waiting_count() == 1, WITHIN)
            assert (await answer(a, rid, "yes", "ann")).status_code == 200
            view = await returned(poll)
        assert view["answer"]["values"] == {"ok": "yes"}

