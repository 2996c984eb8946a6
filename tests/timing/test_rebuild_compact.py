"""Start-up arms every timer from the store's compact rows (id + instant), page by page:
each open request with a timer exactly once, at the instant the scheduler itself computes,
nothing for closed or untimed requests."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import pytest

from bridge import scheduler
from bridge.models import RequestState, TimerStep
from bridge.store.sqlite import SQLiteStore
from bridge.timers import next_instant
from tests.harness import ManualClock
from tests.store.helpers import make_request
from tests.timing.helpers import bridge_on

CONFIG = {"routes": [{"name": "default", "notify": ["web"], "on_timeout": {"keep_waiting": True}}]}


async def test_start_arms_each_open_timer_once_from_compact_rows(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler, "REBUILD_PAGE", 3)  # many pages from a few requests
    clock = ManualClock()
    now = clock.now()
    later = [now + timedelta(hours=h) for h in range(1, 6)]
    timed = [
        make_request(state=RequestState.posted, deadline=later[i % 5], next_reminder_at=later[(i + 2) % 5])
        for i in range(10)
    ]
    timed.append(make_request(state=RequestState.pending, next_escalation_at=later[1], escalation_level=1))
    timed.append(make_request(state=RequestState.posted, deadline=later[4], timer_steps=[
        TimerStep(id="remind:1", kind="remind", targets=["web"], lease_until=later[0])]))
    others = [make_request(state=RequestState.posted),  # no timer
              make_request(state=RequestState.cancelled, deadline=later[0]),
              make_request(state=RequestState.delivered, deadline=later[0])]
    store = SQLiteStore(tmp_path / "bridge.db")
    await store.open()
    for request in [*timed, *others]:
        await store.create_request(request)
    await store.close()
    async with bridge_on(tmp_path, clock, CONFIG) as daemon:
        await daemon.service.drain()  # the claimed step is taken over at start (it was "resume")
        assert len(daemon.scheduler.index) == len(timed)
        stored = [await daemon.store.get_request(r.id) for r in timed]
        armed = daemon.scheduler.index.pop_due(math.inf)
    instants = {r.id: next_instant(r) for r in stored if r is not None}
    assert armed == sorted(instants, key=lambda rid: (instants[rid], rid))
