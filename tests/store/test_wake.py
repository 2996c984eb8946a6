"""Every wake-up path of a long poll (`GET /v1/requests/{id}?wait=`), each against real parts:
an answer in the same process, by another process on the same SQLite file (the CLI), and on
another replica of the same PostgreSQL database; new requests, cancellations and timers
crossing replicas; the listening connection killed and a change made while it was down;
shutdown. Nothing sleeps to wait: every wait has a deadline."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from bridge.daemon import Daemon
from bridge.health import Status
from bridge.store.pg_follow import COMPONENT, Follower
from bridge.store.postgres import PostgresStore
from tests.harness import ManualClock, running_bridge, wait_for
from tests.timing.helpers import AUTH, answer, bridge_on, create

WITHIN = 10.0  # every wait's deadline (seconds): generous for a loaded machine, never slept


@asynccontextmanager
async def long_poll(daemon: Daemon, request_id: str, wait_s: float = 60) -> AsyncIterator[asyncio.Task[dict[str, Any]]]:
    """A long poll on `daemon`, parked (its waiter registered) before the block runs."""
    async def poll() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=daemon.base_url, headers=AUTH, timeout=wait_s + 10) as client:
            response = await client.get(f"/v1/requests/{request_id}", params={"wait": wait_s})
        assert response.status_code == 200, response.text
        return dict(response.json())

    before = daemon.service.changes.waiting_count()
    task = asyncio.ensure_future(poll())
    try:
        await wait_for(lambda: task.done() or daemon.service.changes.waiting_count() > before, WITHIN)
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def returned(task: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    return await asyncio.wait_for(task, WITHIN)


def closed(view: dict[str, Any]) -> bool:
    return view["state"] not in ("pending", "posted")


# SQLite ----------------------------------------------------------------------------------------
async def test_an_answer_in_the_same_process_wakes_a_long_poll(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as daemon:
        rid = await create(daemon)
        async with long_poll(daemon, rid) as poll:
            assert not poll.done()
            assert (await answer(daemon, rid, "yes", "ann")).status_code == 200
            view = await returned(poll)
        assert closed(view) and view["answer"]["values"] == {"ok": "yes"}
        assert daemon.service.changes.waiting_count() == 0  # nothing left behind


async def test_an_answer_by_another_process_on_the_same_sqlite_file_wakes_a_long_poll(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as daemon:
        rid = await create(daemon)
        config = tmp_path / "cli.yaml"
        config.write_text(f"store: {{url: '{daemon.settings.store.url}'}}\nsources: [{{type: webhook}}]\n")
        exe = Path(sys.executable).parent / "hitl-bridge"
        async with long_poll(daemon, rid) as poll:
            cli = await asyncio.create_subprocess_exec(
                str(exe), "-c", str(config), "answer", "--offline", rid, "yes", "--as", "bob",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=tmp_path)
            out, _ = await asyncio.wait_for(cli.communicate(), 60)
            assert cli.returncode == 0, out.decode()
            view = await returned(poll)
        assert closed(view) and view["answer"]["values"] == {"ok": "yes"}


async def test_no_wake_up_is_missed_when_the_answer_lands_between_the_read_and_the_wait(tmp_path: Path) -> None:
    """The answer is committed (and published) while the waiter's own read of the request is
    still on its way back: the read says open, yet the wait returns the answer at once."""
    async with running_bridge(tmp_path) as daemon:
        rid = await create(daemon)
        service = daemon.service
        real_get = service.store.get_request
        answered: list[str] = []

        async def get_then_answer(request_id: str) -> Any:
            found = await real_get(request_id)
            if not answered:  # only the waiter's first read: answer before it reaches the wait
                answered.append(request_id)
                from bridge.models import Responder
                await service.answer(request_id, Responder(platform="api", user_id="ann"), {"ok": "yes"}, via="api")
            return found

        service.store.get_request = get_then_answer  # type: ignore[method-assign]
        try:
            result = await asyncio.wait_for(service.wait_closed(rid, 60), WITHIN)
        finally:
            del service.store.get_request  # type: ignore[method-assign]
        assert answered == [rid]
        assert result is not None and not result.is_open


async def test_shutdown_releases_every_waiter(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as daemon:
        rid = await create(daemon)
        waits = [asyncio.ensure_future(daemon.service.wait_closed(rid, 60)) for _ in range(3)]
        await wait_for(lambda: daemon.service.changes.waiting_count() == 3, WITHIN)
        daemon.service.changes.release_waiters()
        results = await asyncio.wait_for(asyncio.gather(*waits), WITHIN)
        assert all(r is not None and r.is_open for r in results)  # answered as it is; the client asks again
        assert daemon.service.changes.waiting_count() == 0
        assert await asyncio.wait_for(daemon.service.wait_closed(rid, 60), WITHIN) is not None  # no new waits


async def test_a_long_poll_that_nothing_wakes_returns_at_its_wait(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as daemon:
        rid = await create(daemon)
        result = await asyncio.wait_for(daemon.service.wait_closed(rid, 0.2), WITHIN)
        assert result is not None and result.is_open
        assert daemon.service.changes.waiting_count() == 0


# PostgreSQL replicas ---------------------------------------------------------------------------
def on(url: str, **extra: Any) -> dict[str, Any]:
    return {"store": {"url": url}, "http": {"api_tokens": {"relay": {"token": AUTH["Authorization"][7:],
                                                                     "act_for_others": True}}},
            "people": {"ann": ["api:ann"]}, **extra}


def follower_of(daemon: Daemon) -> Follower:
    store = daemon.store
    assert isinstance(store, PostgresStore) and store.follower is not None
    return store.follower


async def cut_listening(follower: Follower, admin_url: str) -> None:
    """Kill the follower's listening connection on the server, then wait until it knows."""
    admin = await asyncpg.connect(admin_url)
    try:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", follower.backend_pid)
    finally:
        await admin.close()
    await wait_for(lambda: not follower.connected.is_set(), WITHIN)


@asynccontextmanager
async def replicas(tmp_path: Path, url: str, clock: ManualClock | None = None,
                   **extra: Any) -> AsyncIterator[tuple[Daemon, Daemon]]:
    clock = clock or ManualClock()
    async with bridge_on(tmp_path / "a", clock, on(url, **extra)) as a, \
            bridge_on(tmp_path / "b", clock, on(url, **extra)) as b:
        for replica in (a, b):
            await asyncio.wait_for(follower_of(replica).connected.wait(), WITHIN)
        yield a, b


@pytest.mark.postgres
async def test_an_answer_on_replica_b_wakes_a_long_poll_on_replica_a(tmp_path: Path, postgres_url: str) -> None:
    async with replicas(tmp_path, postgres_url) as (a, b):
        rid = await create(a)
        async with long_poll(a, rid) as poll:
            assert (await answer(b, rid, "yes", "ann")).status_code == 200
            view = await returned(poll)
        assert closed(view) and view["answer"]["values"] == {"ok": "yes"}


@pytest.mark.postgres
async def test_new_requests_and_cancellations_reach_the_other_replica(tmp_path: Path, postgres_url: str) -> None:
    async with replicas(tmp_path, postgres_url) as (a, b):
        version = b.service.changes.version
        rid = await create(a)
        await wait_for(lambda: b.service.changes.version > version, WITHIN)  # a live view on b would redraw
        async with long_poll(b, rid) as poll:
            async with httpx.AsyncClient(base_url=a.base_url, headers=AUTH) as client:
                response = await client.post(f"/v1/requests/{rid}/cancel", json={"reason": "not needed"})
            assert response.status_code == 200, response.text
            view = await returned(poll)
        assert view["state"] in ("cancelled", "delivered", "failed") and closed(view)


@pytest.mark.postgres
async def test_a_timer_re_armed_on_one_replica_fires_on_the_other(tmp_path: Path, postgres_url: str) -> None:
    clock = ManualClock()
    routes = [{"notify": ["web:team"], "remind_every": "10m", "timeout": "2h"}]
    async with replicas(tmp_path, postgres_url, clock, routes=routes) as (a, b):
        rid = await create(a)
        first = clock.now() + timedelta(minutes=10)
        await wait_for(lambda: b.scheduler.index.instant_of(rid) == first.timestamp(), WITHIN)
        clock.advance(minutes=10)
        assert await a.scheduler.run_due() == 1  # a sends reminder 1 and re-arms for 20m
        await a.service.drain()
        second = first + timedelta(minutes=10)
        # b hears the re-armed instant from the notification, not from its resync (whose
        # horizon is seconds, not ten minutes)
        await wait_for(lambda: b.scheduler.index.instant_of(rid) == second.timestamp(), WITHIN)
        clock.advance(minutes=10)
        assert await b.scheduler.run_due() == 1  # b alone sends reminder 2
        await b.service.drain()
        reminded = [e.data["n"] for e in await b.store.list_events(rid) if e.kind == "reminded"]
        assert reminded == [1, 2]
        assert (await answer(a, rid, "yes", "ann")).status_code == 200
        await wait_for(lambda: b.scheduler.index.instant_of(rid) is None, WITHIN)  # answered: b drops it


@pytest.mark.postgres
async def test_a_replica_whose_listening_connection_dies_reconnects_and_catches_up(
        tmp_path: Path, postgres_url: str, postgres_admin_url: str) -> None:
    async with replicas(tmp_path, postgres_url) as (a, b):
        follower = follower_of(a)
        follower.backoff = (1.0,)  # a gap long enough to be sure the answer lands inside it
        rid = await create(a)
        async with long_poll(a, rid) as poll:
            await cut_listening(follower, postgres_admin_url)
            check = a.service.health.current(COMPONENT)
            assert check is not None and check.status is Status.degraded  # the outage is visible
            received = follower.received
            assert (await answer(b, rid, "yes", "ann")).status_code == 200  # while a is not listening
            view = await returned(poll)  # after reconnecting, a looked for what it missed
            assert follower.received == received  # ...it was not a notification that woke it
        assert closed(view)
        assert follower.reconnects == 1
        check = a.service.health.current(COMPONENT)
        assert check is not None and check.status is Status.ok
        # and it listens again: the next answer on b reaches a by notification
        rid2 = await create(a)
        async with long_poll(a, rid2) as poll:
            assert (await answer(b, rid2, "no", "ann")).status_code == 200
            assert closed(await returned(poll))
        assert follower.received > received


@pytest.mark.postgres
async def test_a_notification_means_committed(postgres_url: str) -> None:
    """A rolled-back change of a request is never announced."""
    store = PostgresStore(postgres_url)
    await store.open()
    heard: list[str] = []
    try:
        listener = await asyncpg.connect(store.options.dsn)
        try:
            from bridge.store.pg_follow import channel_of
            schema = await listener.fetchval("SELECT current_schema()")
            await listener.add_listener(channel_of(schema), lambda *args: heard.append(args[-1]))
            writer = await asyncpg.connect(store.options.dsn)
            try:
                async with writer.transaction():
                    await writer.execute(
                        "INSERT INTO requests (id, source, state, route, created_at, updated_at, body) "
                        "VALUES ('r-kept', 'test', 'pending', 'default', now(), now(), '{}')")
                with pytest.raises(RuntimeError):
                    async with writer.transaction():
                        await writer.execute(
                            "INSERT INTO requests (id, source, state, route, created_at, updated_at, body) "
                            "VALUES ('r-undone', 'test', 'pending', 'default', now(), now(), '{}')")
                        raise RuntimeError("roll back")
                await writer.execute("UPDATE requests SET state='cancelled' WHERE id='r-kept'")
            finally:
                await writer.close()
            await wait_for(lambda: len(heard) >= 2, WITHIN)
            assert [h.rsplit("\t", 1)[1] for h in heard] == ["r-kept", "r-kept"]
            assert heard[1].startswith("cancelled\t\t")
        finally:
            await listener.close()
    finally:
        await store.close()


async def test_a_long_poll_answers_like_the_plain_read_and_refuses_alike(tmp_path: Path) -> None:
    """The waiting form (a lean endpoint) and the plain read give the same body, status
    codes and refusals; a `wait` FastAPI would refuse is refused the same way."""
    async with running_bridge(tmp_path, {"http": {"api_tokens": {"relay": {
            "token": AUTH["Authorization"][7:], "act_for_others": True}}}, "people": {"ann": ["api:ann"]}}) as daemon:
        rid = await create(daemon)
        assert (await answer(daemon, rid, "yes", "ann")).status_code == 200
        async with httpx.AsyncClient(base_url=daemon.base_url, headers=AUTH) as client:
            waited = (await client.get(f"/v1/requests/{rid}", params={"wait": "5"})).json()
            plain = (await client.get(f"/v1/requests/{rid}")).json()
            assert set(waited) == set(plain) and {"posts", "outbox", "votes"} <= set(plain)
            assert (waited["id"], waited["answer"], waited["posts"]) == (plain["id"], plain["answer"], plain["posts"])
            missing = await client.get("/v1/requests/nope", params={"wait": "0.5"})
            assert missing.status_code == 404 and missing.json() == {"detail": "no request 'nope'"}
            for bad in ("-1", "121", "abc", "nan", "1e400"):
                refused = await client.get(f"/v1/requests/{rid}", params={"wait": bad})
                assert refused.status_code == 422, (bad, refused.text)
            assert set((await client.get(f"/v1/requests/{rid}", params={"wait": "0"})).json()) == set(plain)
        async with httpx.AsyncClient(base_url=daemon.base_url) as anonymous:
            for params in ({"wait": "5"}, {}):
                refused = await anonymous.get(f"/v1/requests/{rid}", params=params)
                assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"


def test_notification_payloads_are_read_and_malformed_ones_refused() -> None:
    from datetime import UTC, datetime

    from bridge.store.pg_follow import channel_of, parse

    assert parse("posted\t1767225600.5\tr-1") == ("r-1", True, datetime(2026, 1, 1, 0, 0, 0, 500000, tzinfo=UTC))
    assert parse("answered\t\tr-2") == ("r-2", False, None)
    assert parse("pending\t\tr\tx") == ("r\tx", True, None)  # the id comes last: it may hold anything
    for bad in ("", "posted", "posted\tsoon\tr-1"):
        assert parse(bad) is None
    assert channel_of("hitl") == "hitl_bridge.hitl"
    assert len(channel_of("s" * 60).encode()) <= 63  # a long schema name still makes a valid channel


async def test_other_methods_on_a_request_are_answered_as_before(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as daemon:
        rid = await create(daemon)
        async with httpx.AsyncClient(base_url=daemon.base_url, headers=AUTH) as client:
            for params in ({"wait": "5"}, {}):
                assert (await client.head(f"/v1/requests/{rid}", params=params)).status_code == 405
                assert (await client.delete(f"/v1/requests/{rid}", params=params)).status_code == 405
