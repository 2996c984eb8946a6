"""Timer lateness and memory: 10,000 deadlines in the same minute (prints figures; asserts nothing).

    .venv/bin/python bench/bench_timers.py [--count 10000] [--window 60] [--lead 10] [--on-timeout fail]

A real daemon (SQLite store in a temp dir, system clock, APScheduler) starts over a store
holding `--count` posted requests whose deadlines fall at random instants inside one
`--window`-second window starting `--lead` seconds later. Every deadline does its full
work: `fail` closes the request (compare-and-set + audit event + outbox entry) and the
write-back outbox delivers it; `answer` records a timeout answer; `keep` only notes it.

Lateness = wall time when the request's timer work is committed in the store − its
deadline. Targets (issue 6): p99 ≤ 100 ms, max ≤ 250 ms (the nearest peer is 4-7 s late).
Memory: the scheduler's index (tracemalloc) per pending request. Target ≤ 2 KiB.

The store lives in $TMPDIR (set TMPDIR=/dev/shm to take the disk out of the figures); the
load average is printed too, as other work on the machine shows up in the tail.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bridge.config import Settings  # noqa: E402
from bridge.daemon import Daemon  # noqa: E402
from bridge.models import Question, QuestionKind, Request, RequestState  # noqa: E402
from bridge.scheduler import Fired, TimerIndex  # noqa: E402
from bridge.store.codec import request_columns  # noqa: E402
from bridge.store.sqlite import SQLiteStore  # noqa: E402
from bridge.timers import next_instant  # noqa: E402

ON_TIMEOUT = {"fail": {"fail": True}, "answer": {"answer": "no"}, "keep": {"keep_waiting": True}}


async def seed(db: Path, count: int, start: datetime, window: float) -> None:
    store = SQLiteStore(db)
    await store.open()
    await store.close()
    now = datetime.now(UTC)
    question = Question(id="ok", kind=QuestionKind.confirm, prompt="Go?")
    rows = []
    for i in range(count):
        deadline = start + timedelta(seconds=random.uniform(0, window))
        request = Request(id=f"r_bench{i:07d}", title=f"bench {i}", questions=[question], route="bench",
                          source="webhook", created_at=now, updated_at=now, deadline=deadline,
                          state=RequestState.posted)
        rows.append(request_columns(request))
    with sqlite3.connect(db) as conn:
        conn.executemany(
            "INSERT INTO requests (id, source, external_id, state, route, created_at, updated_at, deadline, "
            "next_reminder_at, next_escalation_at, body) VALUES (:id, :source, :external_id, :state, :route, "
            ":created_at, :updated_at, :deadline, :next_reminder_at, :next_escalation_at, :body)", rows)


async def index_memory(db: Path) -> tuple[float, int]:
    """Bytes per pending request held by the scheduler's index (what stays in memory)."""
    store = SQLiteStore(db)
    await store.open()
    timed = await store.list_timed()
    await store.close()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    index = TimerIndex()
    for request in timed:
        index.arm(request.id, next_instant(request))
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return grown / max(1, len(index)), len(index)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def main(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING)
    load_before = f"{os.getloadavg()[0]:.2f}"
    workdir = Path(tempfile.mkdtemp(prefix="bench-timers-"))
    db = workdir / "bridge.db"
    start = datetime.now(UTC) + timedelta(seconds=args.lead)
    await seed(db, args.count, start, args.window)
    per_request, indexed = await index_memory(db)

    settings = Settings.model_validate({
        "store": {"url": f"sqlite:///{db}"}, "http": {"listen": "127.0.0.1:0"},
        "sources": [{"type": "webhook"}], "web": {},
        "routes": [{"name": "bench", "notify": ["web"], "on_timeout": ON_TIMEOUT[args.on_timeout]}],
    })
    daemon = Daemon(settings)
    lateness: list[float] = []
    done = asyncio.Event()

    def observe(fired: Fired) -> None:
        lateness.append(time.time() - fired.due_at.timestamp())
        if len(lateness) >= args.count:
            done.set()

    t0 = time.perf_counter()
    await daemon.start(serve_http=False)
    daemon.scheduler.observers.append(observe)
    started = time.perf_counter() - t0
    if datetime.now(UTC) > start:
        print(f"warning: the daemon took {started:.1f}s to start, past --lead {args.lead}s: "
              "the first deadlines are late because of the start, not the scheduler")
    try:
        await asyncio.wait_for(done.wait(), timeout=args.lead + args.window + 120)
    except TimeoutError:
        print(f"only {len(lateness)} of {args.count} fired in time")
    await asyncio.sleep(0.5)  # let the outbox catch up before counting
    counts = await daemon.store.count_by_state()
    outbox_left = len(await daemon.store.list_outbox())
    await daemon.stop()

    ms = [x * 1000 for x in lateness]
    result: dict[str, Any] = {
        "deadlines": args.count, "window_s": args.window, "on_timeout": args.on_timeout,
        "fired": len(ms), "daemon_start_s": round(started, 2),
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p99_ms": round(pct(ms, 99), 1) if ms else None,
        "max_ms": round(max(ms), 1) if ms else None,
        "early": sum(1 for x in ms if x < 0),
        "index_bytes_per_request": round(per_request), "indexed": indexed,
        "states_after": counts, "outbox_pending_after": outbox_left,
    }
    print(f"load average before/after: {load_before} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, "
          f"store in {workdir}")
    print("timer lateness, 10,000 deadlines in one minute (targets: p99 ≤ 100 ms, max ≤ 250 ms)")
    print(f"  fired {result['fired']}/{args.count}  p50 {result['p50_ms']} ms  p99 {result['p99_ms']} ms  "
          f"max {result['max_ms']} ms  early {result['early']}")
    print(f"scheduler memory per pending request (target ≤ 2048 B): {result['index_bytes_per_request']} B "
          f"({indexed} indexed)")
    print(f"store after: {counts}, outbox entries not yet delivered: {outbox_left}")
    print(result)
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--lead", type=float, default=10.0, help="seconds between start and the window")
    parser.add_argument("--on-timeout", choices=sorted(ON_TIMEOUT), default="fail")
    asyncio.run(main(parser.parse_args()))
