"""Store soak: WAL size and RSS through a long run, and /metrics cost with many failing deliveries.

Runs `hitl-bridge serve` as its own process on 127.0.0.1 with a fresh SQLite store, then:
  1. soak: N requests, each created with a callback, answered, and delivered to a local
     receiver, by 16 concurrent clients. The WAL file's size and the daemon's RSS are sampled
     every 100 ms: the largest WAL, the WAL after 3 s idle, the largest and the last RSS.
  2. metrics: GET /metrics timed (median of 20) with no failing delivery, then again after
     F more requests whose callbacks all answer 503 (each delivery failing, retried later).

Usage: .venv/bin/python bench/soak_store.py [--requests 60000] [--failing 10000]
Targets (fail-loudly issue): WAL ≤ 64 MiB through 60,000 requests; /metrics costs the same
with 10,000 failing deliveries as with none.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import free_port, serve_process

from bridge.http.loopback import serving

BODY = {"title": "Deploy api to prod?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}],
        "context": {"service": "api", "version": "1.2.3", "diff": "x" * 600}}
MiB = 1024 * 1024


@dataclass
class Samples:
    wal_max: int = 0
    rss_max: int = 0
    rss_last: int = 0
    wal: list[int] = field(default_factory=list)


def rss_of(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"VmRSS:\s+(\d+) kB", text)
    return int(found.group(1)) * 1024 if found else 0


def size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


async def sample(pid: int, wal: Path, into: Samples, stop: asyncio.Event, progress: dict[str, int]) -> None:
    """Sample every 100 ms; a progress line on stderr every 15 s."""
    shown = time.monotonic()
    while not stop.is_set():
        size, rss = size_of(wal), rss_of(pid)
        into.wal_max = max(into.wal_max, size)
        into.rss_max = max(into.rss_max, rss)
        into.rss_last = rss or into.rss_last
        if time.monotonic() - shown >= 15:
            shown = time.monotonic()
            print(f"  {progress['answered']:,} answered, {progress['delivered']:,} delivered, "
                  f"WAL {size / MiB:.1f} MiB (max {into.wal_max / MiB:.1f}), RSS {rss / MiB:.0f} MiB",
                  file=sys.stderr, flush=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)


@contextlib.asynccontextmanager
async def daemon(tmp: str) -> AsyncIterator[tuple[str, int, Path]]:
    """The daemon as its own process; yields its base URL, pid and store file."""
    port = free_port()
    db = Path(tmp) / "bridge.db"
    config = (f"store: {{url: 'sqlite:///{db}'}}\nhttp: {{listen: '127.0.0.1:{port}'}}\n"
              "sources: [{type: webhook}]\nlog_level: WARNING\n"
              "delivery: {first_retry: 1h, max_backoff: 1h, timeout: 60s}\n")  # failing ones wait
    async with serve_process(Path(tmp), port, config, "soak") as proc:
        yield f"http://127.0.0.1:{port}", proc.pid, db


async def create_and_answer(client: aiohttp.ClientSession, total: int, prefix: str, callback: str,
                            concurrency: int, progress: dict[str, int] | None = None) -> int:
    """Create `total` requests with `callback` and answer each; returns how many got a 5xx."""
    counter = iter(range(total))
    errors = 0
    progress = progress if progress is not None else {"answered": 0}

    async def worker() -> None:
        nonlocal errors
        for i in counter:
            body = {**BODY, "external_id": f"{prefix}-{i}", "callback": {"url": callback, "secret": "s" * 24}}
            async with client.post("/v1/requests", json=body) as r:
                data = await r.json()
                if r.status >= 500:
                    errors += 1
                    continue
            async with client.post(f"/v1/requests/{data['id']}/answer", json={"value": "yes"}) as r:
                await r.read()
                errors += r.status >= 500
            progress["answered"] += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return errors


async def metrics_time(client: aiohttp.ClientSession, rounds: int = 20) -> tuple[float, str]:
    times, body = [], ""
    for _ in range(rounds):
        start = time.perf_counter()
        async with client.get("/metrics") as r:
            body = await r.text()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), body


def failing_total(metrics: str) -> float:
    return sum(float(m.group(1)) for m in re.finditer(r"^hitl_outbox_failing\{[^}]*\} (\S+)$", metrics, re.M))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=60_000)
    parser.add_argument("--failing", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    progress = {"answered": 0, "delivered": 0}
    all_in = asyncio.Event()

    async def ok(request: Request) -> Response:
        await request.body()
        progress["delivered"] += 1
        if progress["delivered"] >= args.requests:
            all_in.set()
        return Response(status_code=204)

    async def down(request: Request) -> Response:
        await request.body()
        return Response(status_code=503)

    hooks = Starlette(routes=[Route("/ok", ok, methods=["POST"]), Route("/down", down, methods=["POST"])])
    with tempfile.TemporaryDirectory() as tmp:
        async with serving(hooks, "the callback receiver") as hook_port, daemon(tmp) as (base, pid, db):
            samples, stop = Samples(), asyncio.Event()
            sampler = asyncio.create_task(sample(pid, Path(f"{db}-wal"), samples, stop, progress))
            connector = aiohttp.TCPConnector(limit=args.concurrency + 2)
            async with aiohttp.ClientSession(base, connector=connector) as client:
                start = time.perf_counter()
                errors = await create_and_answer(client, args.requests, "soak",
                                                 f"http://127.0.0.1:{hook_port}/ok", args.concurrency, progress)
                try:
                    await asyncio.wait_for(all_in.wait(), timeout=300)
                except TimeoutError:
                    _, body = await metrics_time(client, 1)
                    log = (Path(tmp) / "daemon.log").read_text()[-3000:]
                    sys.exit(f"only {progress['delivered']:,} of {args.requests:,} callbacks arrived within 5 "
                             f"minutes\n{body}\n--- daemon log (end) ---\n{log}")
                elapsed = time.perf_counter() - start
                await asyncio.sleep(3)
                wal_idle = size_of(Path(f"{db}-wal"))
                quiet_ms, _ = await metrics_time(client)
                failing_errors = await create_and_answer(client, args.failing, "failing",
                                                         f"http://127.0.0.1:{hook_port}/down", args.concurrency)
                deadline = time.monotonic() + 600
                while True:
                    _, body = await metrics_time(client, 1)
                    if failing_total(body) >= args.failing or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.5)
                loaded_ms, body = await metrics_time(client)
            stop.set()
            await sampler
    print(f"soak: {args.requests:,} requests (create → answer → callback), {args.concurrency} clients: "
          f"{args.requests / elapsed:,.0f} requests/s, {errors} 5xx")
    print(f"WAL: max {samples.wal_max / MiB:.1f} MiB (target ≤ 64 MiB), {wal_idle / MiB:.1f} MiB after 3 s idle")
    print(f"RSS: max {samples.rss_max / MiB:.0f} MiB, {samples.rss_last / MiB:.0f} MiB at the end")
    print(f"/metrics: median {quiet_ms:.1f} ms with 0 failing deliveries, {loaded_ms:.1f} ms with "
          f"{failing_total(body):,.0f} failing ({failing_errors} 5xx while creating them)")


if __name__ == "__main__":
    asyncio.run(main())
