"""Retention (`store.retain_closed`): pruned in batches, nothing open, one replica at a time,
counted and logged; the config key. SQLite and PostgreSQL (see conftest.py)."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from bridge import retention
from bridge.models import OPEN_STATES, RequestState
from bridge.retention import Retention
from bridge.store import Store
from bridge.store.postgres import PostgresStore
from tests.harness import ManualClock, make_settings, running_bridge, wait_for
from tests.store.helpers import at, make_request


async def closed_long_ago(store: Store, count: int) -> list[str]:
    ids = []
    for i in range(count):
        request = make_request(created=i, state=RequestState.posted)
        await store.create_request(request)
        await store.transition(request.id, OPEN_STATES, RequestState.cancelled, now=at(100))
        ids.append(request.id)
    return ids


async def test_a_round_prunes_past_the_retention_in_batches(store: Store, monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(retention, "BATCH", 3)
    monkeypatch.setattr(retention, "PAUSE_S", 0.0)
    monkeypatch.setattr(retention, "YIELD", 0.0)
    old = await closed_long_ago(store, 7)
    waiting = make_request(created=0, state=RequestState.posted, deadline=at(10))  # open, overdue: kept
    await store.create_request(waiting)
    clock = ManualClock(at(100) + timedelta(days=90, seconds=1))
    batches: list[int] = []
    keeper = Retention(store, timedelta(days=90), clock, on_pruned=batches.append)
    with caplog.at_level(logging.INFO, logger="hitl_bridge.retention"):
        assert await keeper.tick() == 7
    assert batches == [3, 3, 1]
    assert "retention: pruned 7 closed request(s)" in caplog.text
    assert [await store.get_request(rid) for rid in old] == [None] * 7
    assert await store.get_request(waiting.id) is not None
    assert await keeper.tick() == 0


async def test_nothing_is_pruned_before_the_retention_has_passed(store: Store) -> None:
    old = await closed_long_ago(store, 2)
    clock = ManualClock(at(100) + timedelta(days=89))
    assert await Retention(store, timedelta(days=90), clock).tick() == 0
    assert all([await store.get_request(rid) for rid in old])


@pytest.mark.postgres
async def test_one_replica_prunes_at_a_time(postgres_url: str) -> None:
    first, second = PostgresStore(postgres_url), PostgresStore(postgres_url)
    await first.open()
    await second.open()
    try:
        await closed_long_ago(first, 2)
        clock = ManualClock(at(100) + timedelta(days=91))
        assert await Retention(first, timedelta(days=90), clock).tick() == 2
        assert await Retention(second, timedelta(days=90), clock).tick() is None  # the first holds the role
        await first.resign(retention.ROLE)
        assert await Retention(second, timedelta(days=90), clock).tick() == 0
    finally:
        await first.close()
        await second.close()


def test_the_config_key_takes_a_duration_or_off(tmp_path: Path) -> None:
    assert make_settings(tmp_path).store.retain_closed is None  # default: keep everything
    assert make_settings(tmp_path, {"store": {"retain_closed": "90d"}}).store.retain_closed == timedelta(days=90)
    assert make_settings(tmp_path, {"store": {"retain_closed": "off"}}).store.retain_closed is None
    for bad in ("soon", "-5d", 0, "90 days please"):
        with pytest.raises(ValidationError, match="retain_closed"):
            make_settings(tmp_path, {"store": {"retain_closed": bad}})


async def test_the_daemon_prunes_at_start_and_counts_it(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_bridge(tmp_path, clock=clock) as daemon:
        old = await closed_long_ago(daemon.store, 3)  # created and closed in 2026-01-01 (helpers' T0)
    clock.current = at(100) + timedelta(days=30, seconds=1)
    async with running_bridge(tmp_path, {"store": {"retain_closed": "30d"}}, clock=clock) as daemon:
        async def metric() -> str:
            async with httpx.AsyncClient(base_url=daemon.base_url) as client:
                return (await client.get("/metrics")).text

        async def counted() -> bool:
            return "hitl_requests_pruned_total 3.0" in await metric()

        await wait_for(counted)
        assert [await daemon.store.get_request(rid) for rid in old] == [None] * 3
