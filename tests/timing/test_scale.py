"""10,000 pending requests with staggered deadlines (some sharing an instant, one restart
half-way): each fires exactly once, never before its instant, none skipped."""

from __future__ import annotations

import sqlite3
from collections import Counter
from datetime import timedelta
from pathlib import Path

from bridge.models import Question, QuestionKind, Request, RequestState
from bridge.scheduler import Fired
from bridge.store.codec import request_columns
from bridge.store.sqlite import SQLiteStore
from tests.harness import ManualClock
from tests.timing.helpers import bridge_on

COUNT = 10_000
# keep_waiting: the deadline's own work is one store update and one audit event, so the test
# measures the scheduler, not the write-back outbox (the expire path is covered in
# test_ladder/test_policies; bench/bench_timers.py runs 10,000 expirations through the outbox).
CONFIG = {"routes": [{"name": "bulk", "notify": ["web"], "on_timeout": {"keep_waiting": True}}]}


async def seed(db: Path, clock: ManualClock) -> dict[str, float]:
    """Store COUNT pending requests in one transaction (test data; the daemon is not running)."""
    store = SQLiteStore(db)
    await store.open()  # creates the schema
    await store.close()
    now = clock.now()
    question = Question(id="ok", kind=QuestionKind.confirm, prompt="Go?")
    rows, deadlines = [], {}
    for i in range(COUNT):
        deadline = now + timedelta(seconds=1 + (i // 3) * 0.7)  # every 3 share an instant
        request = Request(id=f"r_bulk{i:06d}", title=f"bulk {i}", questions=[question], route="bulk",
                          source="webhook", created_at=now, updated_at=now, deadline=deadline,
                          state=RequestState.posted)
        rows.append(request_columns(request))
        deadlines[request.id] = deadline.timestamp()
    with sqlite3.connect(db) as conn:
        conn.executemany(
            "INSERT INTO requests (id, source, external_id, state, route, created_at, updated_at, deadline, "
            "next_reminder_at, next_escalation_at, body) VALUES (:id, :source, :external_id, :state, :route, "
            ":created_at, :updated_at, :deadline, :next_reminder_at, :next_escalation_at, :body)", rows)
    return deadlines


async def test_ten_thousand_staggered_deadlines_fire_once_each(tmp_path: Path) -> None:
    clock = ManualClock()
    deadlines = await seed(tmp_path / "bridge.db", clock)
    last = max(deadlines.values())
    fired: list[Fired] = []
    step = timedelta(minutes=3)
    for phase in range(2):  # a restart half-way: the second daemon rebuilds what is left
        async with bridge_on(tmp_path, clock, CONFIG) as daemon:
            daemon.scheduler.observers.append(fired.append)
            assert len(daemon.scheduler.index) == COUNT - len(fired)
            while clock.now().timestamp() <= last and (phase == 1 or len(fired) < COUNT // 2):
                clock.advance(seconds=step.total_seconds())
                await daemon.scheduler.run_due()
            await daemon.service.drain()
    assert len(fired) == COUNT
    assert Counter(f.request_id for f in fired).most_common(1)[0][1] == 1
    for f in fired:
        assert f.due_at.timestamp() == deadlines[f.request_id]
        assert f.due_at <= f.fired_at < f.due_at + step  # on the first run_due after its instant
    with sqlite3.connect(tmp_path / "bridge.db") as conn:
        left = conn.execute("SELECT COUNT(*) FROM requests WHERE deadline IS NOT NULL").fetchone()[0]
        passed = conn.execute("SELECT COUNT(*), COUNT(DISTINCT request_id) FROM events "
                              "WHERE kind='deadline_passed'").fetchone()
    assert left == 0
    assert tuple(passed) == (COUNT, COUNT)
