"""Timers with several replicas on one PostgreSQL database: a reminder, an escalation level
and a deadline happen once whichever replicas hold them, and a request taken in by a
replica that then stopped still gets its timers from another replica."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bridge.daemon import Daemon
from bridge.models import RequestState
from bridge.scheduler import RESYNC_JOB
from tests.harness import ManualClock
from tests.timing.helpers import bridge_on, create, events, kinds, stored
from tests.timing.test_ladder import LADDER

pytestmark = pytest.mark.postgres


def on(url: str, config: dict[str, Any]) -> dict[str, Any]:
    return {**config, "store": {"url": url}}


async def step_all(clock: ManualClock, *replicas: Daemon, **delta: float) -> list[int]:
    """Move the shared clock; every replica re-reads the timers due soon (as its periodic
    resync does) and fires what it holds, all at the same moment."""
    clock.advance(**delta)
    for replica in replicas:
        await replica.scheduler.resync()
    fired = await asyncio.gather(*(r.scheduler.run_due() for r in replicas))
    for replica in replicas:
        await replica.service.drain()
    return list(fired)


async def held(replica: Daemon, count: int, within: float = 10.0) -> None:
    """Wait (with a deadline) until `replica`'s scheduler holds `count` timers."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while len(replica.scheduler.index) != count:
        assert loop.time() < deadline, f"the replica holds {len(replica.scheduler.index)} timers, not {count}"
        await asyncio.sleep(0.01)


async def test_two_replicas_holding_the_same_timers_act_once(tmp_path: Path, postgres_url: str) -> None:
    clock = ManualClock()
    config = on(postgres_url, LADDER)
    async with bridge_on(tmp_path / "a", clock, config) as a, bridge_on(tmp_path / "b", clock, config) as b:
        rid = await create(a)
        await held(b, 1)  # taken in by a after b started: b hears of its timer at once (NOTIFY)
        assert await b.scheduler.resync() == 0  # nothing new for the periodic resync
        clock.advance(minutes=9, seconds=55)
        assert await b.scheduler.resync() == 0

        fired = await step_all(clock, a, b, seconds=5)  # 10m: reminder 1
        assert sum(fired) >= 1
        assert [e.data["n"] for e in await events(a, rid, "reminded")] == [1]

        await step_all(clock, a, b, minutes=5)  # 15m: level 1
        await step_all(clock, a, b, minutes=5)  # 20m: reminder 2
        await step_all(clock, a, b, minutes=10)  # 30m: reminder 3
        await step_all(clock, a, b, minutes=10)  # 40m: reminder 4
        await step_all(clock, a, b, minutes=5)  # 45m: level 2
        assert [e.data["level"] for e in await events(a, rid, "escalated")] == [1, 2]
        assert [e.data["n"] for e in await events(a, rid, "reminded")] == [1, 2, 3, 4]
        assert [p.target for p in await a.store.list_posts(rid)] == ["web:team", "web:lead", "web:boss"]

        await step_all(clock, a, b, hours=2)  # deadline: on_timeout answers "no", once
        request = await stored(b, rid)
        assert request.state in (RequestState.expired, RequestState.delivered)
        assert (await kinds(a, rid)).count("expired") == 1


async def test_a_request_whose_replica_stopped_gets_its_timers_from_another(tmp_path: Path,
                                                                           postgres_url: str) -> None:
    clock = ManualClock()
    config = on(postgres_url, {"routes": [{"notify": ["web:team"], "remind_every": "10m", "timeout": "30m"}]})
    async with bridge_on(tmp_path / "b", clock, config) as b:
        async with bridge_on(tmp_path / "a", clock, config) as a:
            rid = await create(a)
        await held(b, 1)  # heard of at once; now as if that notification had been missed:
        b.scheduler.index.arm(rid, None)
        assert b.scheduler._aps is not None and b.scheduler._aps.get_job(RESYNC_JOB) is not None  # every 5 s
        clock.advance(minutes=10)
        await b.scheduler.resync()
        assert len(b.scheduler.index) == 1
        assert await b.scheduler.run_due() == 1
        await b.service.drain()
        assert [e.data["n"] for e in await events(b, rid, "reminded")] == [1]
        clock.advance(minutes=20)
        await b.scheduler.run_due()  # armed by its own reminder: no resync needed
        await b.service.drain()
        assert (await stored(b, rid)).state is RequestState.expired
