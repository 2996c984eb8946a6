"""Scale, growth: everything stays flat as the store grows (issue 19). Prints figures; asserts nothing.

    .venv/bin/python bench/scale_growth.py [--quick] [--code /work/main] [--postgres [URL]]

Stores are seeded with bulk SQL inserts of realistic rows (a request body as the bridge
writes it, one audit event each), not through the API: 0 requests, 100,000 open (posted,
each with a deadline days away), and 100,000 open + 1,000,000 closed (delivered,
cancelled, expired, failed over the past year). `--quick` uses 10× smaller sizes. Seeded
files are cached in ~/.cache/hitl-bridge/bench (keyed by the sizes and the schema) and
copied for each run (the seeding: bench/scale_growth_seed.py).

Against a real daemon process (`hitl-bridge serve`, SQLite, an open loopback inbox):
- p50 of `GET /v1/requests` (first page, open states), `GET /inbox`, `GET /inbox/live` and
  `GET /metrics` at each size (target: ≤ 50 ms, and ≤ 2× the time at 1,000 open: the
  smallest store that fills a page; the empty store's time is shown too);
- a restart with the 100,000 open timed requests: process start → `/readyz` 200 (≤ 2 s),
  and its RSS then (≤ 150 MiB);
- intake (16 clients) at 100,000 open, with and without an inbox tab polling
  `/inbox/live` every second (no drop beyond noise);
and in process, pruning (`store.retain_closed`) of the 1,000,000 closed: requests removed
per second, in batches of 500.

`--code DIR` runs the daemon from another checkout (e.g. /work/main, to measure "before";
the retention part is left out then). `--postgres` also times, in process, the store calls
behind the open page, the counts and the start-up timer scan on PostgreSQL at 1,000 open
and at 100,000 open + 1,000,000 closed (schemas `growth_*` seeded once and kept).
The machine is shared: figures move with its load (printed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_core import stop  # noqa: E402
from bench.scale_growth_seed import CACHE as CACHE  # noqa: E402
from bench.scale_growth_seed import SEED_VERSION as SEED_VERSION  # noqa: E402
from bench.scale_growth_seed import pg_seeded, seeded  # noqa: E402
from bench.scale_growth_seed import seed as seed  # noqa: E402
from bench.scale_lib import Figure, table  # noqa: E402

#: the size "flat" compares with: a full first page (the empty store shows no rows at all)
REFERENCE = "1,000 open"
PAGE_READS = 15  # GETs per endpoint per size (p50 of these)
INTAKE_CLIENTS = 16
ENDPOINTS = {
    "GET /v1/requests": "/v1/requests?state=pending&state=posted&limit=100",
    "GET /inbox": "/inbox",
    "GET /inbox/live": "/inbox/live",
    "GET /metrics": "/metrics",
}
INTAKE_BODY = {"title": "Deploy api to production?", "description": "Build 4711 passed. Roll it out?",
               "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}],
               "context": {"service": "api", "commit": "9f1c2ab"}}


def mib(n: float) -> str:
    return f"{n / 1024 / 1024:.0f} MiB"


# the daemon -------------------------------------------------------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@contextlib.asynccontextmanager
async def daemon(db: Path, tmp: Path, code: Path | None, *,
                 retain: str | None = None) -> AsyncIterator[tuple[str, int, float]]:
    """`hitl-bridge serve` on a copy-free store file; yields (base url, pid, seconds to /readyz 200)."""
    port = free_port()
    config = tmp / "bench.yaml"
    retention = f", retain_closed: {retain}" if retain else ""
    config.write_text(
        f"store: {{url: 'sqlite:///{db}'{retention}}}\nhttp: {{listen: '127.0.0.1:{port}'}}\nweb: {{}}\n"
        "sources: [{type: webhook}]\nlog_level: WARNING\n"
        "routes:\n  - {name: deploys, notify: [web], timeout: 7d}\n")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    log = (tmp / "daemon.log").open("a")
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from bridge.cli import main; sys.exit(main())",
                             "-c", str(config), "serve"], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as client:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"the daemon ended ({proc.returncode}); see {tmp / 'daemon.log'}")
                with contextlib.suppress(aiohttp.ClientError):
                    async with client.get(f"{base}/readyz") as r:
                        if r.status == 200:
                            break
                if time.perf_counter() - began > 300:
                    raise RuntimeError("the daemon was not ready within 300 s")
                await asyncio.sleep(0.02)
        yield base, proc.pid, time.perf_counter() - began
    finally:
        stop(proc)
        log.close()


async def p50_ms(client: aiohttp.ClientSession, url: str, n: int = PAGE_READS) -> float:
    samples = []
    for _ in range(2):  # warm up
        async with client.get(url) as r:
            await r.read()
    for _ in range(n):
        began = time.perf_counter()
        async with client.get(url) as r:
            await r.read()
            if r.status != 200:
                raise RuntimeError(f"{url}: {r.status}")
        samples.append((time.perf_counter() - began) * 1000)
    return statistics.median(samples)


async def intake(base: str, total: int, tab: bool) -> tuple[float, float]:
    """Requests/s and p99 ms of `total` creates by INTAKE_CLIENTS clients (an inbox tab polling
    /inbox/live every second meanwhile when `tab`)."""
    latencies: list[float] = []
    counter = iter(range(total))
    stop = asyncio.Event()
    async with aiohttp.ClientSession(base, connector=aiohttp.TCPConnector(limit=INTAKE_CLIENTS + 2)) as client:
        async def poll() -> None:
            while not stop.is_set():
                async with client.get("/inbox/live") as r:
                    await r.read()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 1.0)

        async def worker() -> None:
            for i in counter:
                began = time.perf_counter()
                body = {**INTAKE_BODY, "external_id": f"intake-{tab}-{i}-{time.time_ns()}"}
                async with client.post("/v1/requests", json=body) as r:
                    await r.read()
                    if r.status != 201:
                        raise RuntimeError(f"intake: {r.status}")
                latencies.append((time.perf_counter() - began) * 1000)

        poller = asyncio.create_task(poll()) if tab else None
        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(INTAKE_CLIENTS)))
        elapsed = time.perf_counter() - began
        stop.set()
        if poller is not None:
            await poller
    latencies.sort()
    return total / elapsed, latencies[int(len(latencies) * 0.99)]


async def pruned_so_far(base: str) -> float:
    async with aiohttp.ClientSession(base) as client, client.get("/metrics") as r:
        for line in (await r.text()).splitlines():
            if line.startswith("hitl_requests_pruned_total "):
                return float(line.split()[1])
    return 0.0


def work_copy(source: Path, tmp: Path) -> Path:
    target = tmp / "bridge.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(source, target)
    os.sync()  # the copy's write-back must not land on the measurements (GBs for the largest store)
    return target


async def pg_figures(admin_url: str, quick: bool) -> list[Figure]:
    from bridge.models import OPEN_STATES
    from bridge.store.postgres import PostgresStore
    from bridge.store.query import RequestQuery

    open_n, closed_n = (10_000, 100_000) if quick else (100_000, 1_000_000)
    sizes = [(REFERENCE, 1_000, 0), (f"{open_n:,} open + {closed_n:,} closed", open_n, closed_n)]
    calls = {
        "open page (100)": lambda s: s.find_requests(RequestQuery(states=tuple(OPEN_STATES)), limit=100),
        "counts by state": lambda s: s.count_by_state(),
        "'waiting for me' count": lambda s: s.count_requests(RequestQuery(states=tuple(sorted(OPEN_STATES)),
                                                                          not_voted_by=("web:local",))),
        "timer rows page (1,000)": lambda s: s.timer_rows(limit=1000),
    }
    times: dict[str, dict[str, float]] = {}
    arm_all: float = 0.0
    for label, o, c in sizes:
        store = PostgresStore(await pg_seeded(admin_url, o, c))
        await store.open()
        try:
            times[label] = {}
            for name, call in calls.items():
                for _ in range(2):
                    await call(store)
                samples = []
                for _ in range(PAGE_READS):
                    began = time.perf_counter()
                    await call(store)
                    samples.append((time.perf_counter() - began) * 1000)
                times[label][name] = statistics.median(samples)
            if c:
                began, after, armed = time.perf_counter(), None, 0
                while True:
                    page = await store.timer_rows(after=after, limit=5000)
                    armed += len(page)
                    if len(page) < 5000:
                        break
                    after = (page[-1].at, page[-1].request_id)
                arm_all = time.perf_counter() - began
        finally:
            await store.close()
    figures = []
    small, big = times[REFERENCE], times[sizes[1][0]]
    for name in calls:
        figures.append(Figure("growth", f"PostgreSQL {name}, {REFERENCE}", f"{small[name]:.1f} ms", "≤ 50 ms",
                              small[name] <= 50))
        figures.append(Figure("growth", f"PostgreSQL {name}, {sizes[1][0]}", f"{big[name]:.1f} ms",
                              f"≤ 2× 1,000 open ({2 * small[name]:.1f} ms), ≤ 50 ms",
                              big[name] <= max(2 * small[name], 1.0) and big[name] <= 50))
    figures.append(Figure("growth", f"PostgreSQL: every timer row at start ({open_n:,} open)",
                          f"{arm_all:.2f} s", "≤ 2 s", arm_all <= 2))
    return figures


# the figures ------------------------------------------------------------------------------------
async def measure(quick: bool, code: Path | None = None) -> list[Figure]:
    open_n, closed_n = (10_000, 100_000) if quick else (100_000, 1_000_000)
    sizes = [("0", 0, 0), (REFERENCE, 1_000, 0), (f"{open_n:,} open", open_n, 0),
             (f"{open_n:,} open + {closed_n:,} closed", open_n, closed_n)]
    figures: list[Figure] = []
    times: dict[str, dict[str, float]] = {}
    restart: tuple[float, int] | None = None
    total = 2_000 if quick else 5_000  # creates per intake figure
    intake_rates: dict[bool, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="scale-growth-") as name:
        tmp = Path(name)
        for label, o, c in sizes:
            db = work_copy(seeded(o, c), tmp)
            async with daemon(db, tmp, code) as (base, pid, ready_s):
                if o and not c:
                    await asyncio.sleep(1.0)  # settle: what it holds, not a peak while starting
                    restart = (ready_s, rss_of(pid))
                async with aiohttp.ClientSession(base) as client:
                    times[label] = {name: await p50_ms(client, url) for name, url in ENDPOINTS.items()}
                if o and not c:
                    intake_rates[False] = await intake(base, total, tab=False)
                    intake_rates[True] = await intake(base, total, tab=True)
                if c:
                    intake_closed = await intake(base, total, tab=False)
        # the same store with store.retain_closed: 90d, pruning (from the start) while intake runs
        intake_pruning, rate = (0.0, 0.0), 0.0
        if code is None:  # (a checkout from before retention refuses the key)
            db = work_copy(seeded(open_n, closed_n), tmp)
            async with daemon(db, tmp, code, retain="90d") as (base, _pid, _ready):
                began, first = time.perf_counter(), await pruned_so_far(base)
                intake_pruning = await intake(base, total, tab=False)
                pruned = await pruned_so_far(base) - first
                rate = pruned / (time.perf_counter() - began)
    small = times[REFERENCE]
    for name in ENDPOINTS:
        for label, _o, _c in sizes:
            ms = times[label][name]
            if label in ("0", REFERENCE):
                figures.append(Figure("growth", f"{name} p50, {label if label != '0' else 'empty store'}",
                                      f"{ms:.1f} ms", "≤ 50 ms", ms <= 50))
            else:
                figures.append(Figure("growth", f"{name} p50, {label}", f"{ms:.1f} ms",
                                      f"≤ 2× 1,000 open ({2 * small[name]:.1f} ms), ≤ 50 ms",
                                      ms <= 2 * small[name] and ms <= 50))
    if restart is not None:
        ready_s, rss = restart
        figures.append(Figure("growth", f"restart with {open_n:,} open timed: to /readyz 200", f"{ready_s:.2f} s",
                              "≤ 2 s", ready_s <= 2.0))
        figures.append(Figure("growth", f"restart with {open_n:,} open timed: RSS after", mib(rss), "≤ 150 MiB",
                              rss <= 150 * 1024 * 1024))
    if intake_rates:
        (alone, alone_p99), (with_tab, tab_p99) = intake_rates[False], intake_rates[True]
        figures.append(Figure("growth", f"intake at {open_n:,} open, no inbox tab",
                              f"{alone:,.0f}/s, p99 {alone_p99:.0f} ms", "-"))
        figures.append(Figure("growth", f"intake at {open_n:,} open, an inbox tab polling 1/s",
                              f"{with_tab:,.0f}/s, p99 {tab_p99:.0f} ms", "≥ 90 % of without",
                              with_tab >= 0.9 * alone))
    base_rate, base_p99 = intake_closed
    prune_intake, prune_p99 = intake_pruning
    figures.append(Figure("growth", f"intake at {open_n:,} open + {closed_n:,} closed",
                          f"{base_rate:,.0f}/s, p99 {base_p99:.0f} ms", "-"))
    if code is not None:
        return figures
    figures.append(Figure("growth", "  the same while pruning past 90d (store.retain_closed)",
                          f"{prune_intake:,.0f}/s, p99 {prune_p99:.0f} ms", "≥ 80 % of without",
                          prune_intake >= 0.8 * base_rate))
    figures.append(Figure("growth", "  pruning rate meanwhile (batches of 500)", f"{rate:,.0f} requests/s",
                          "> 0", rate > 0))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10× smaller stores")
    parser.add_argument("--code", type=Path, help="run the daemon from this checkout (e.g. /work/main)")
    parser.add_argument("--postgres", metavar="URL", nargs="?", const="postgresql://postgres@127.0.0.1:5432/test",
                        help="also time the store calls on PostgreSQL (schemas seeded once, kept)")
    args = parser.parse_args()
    load = os.getloadavg()
    figures = asyncio.run(measure(args.quick, args.code))
    if args.postgres:
        figures += asyncio.run(pg_figures(args.postgres, args.quick))
    print(table(figures))
    print(f"(load average before: {load[0]:.1f}, after: {os.getloadavg()[0]:.1f}; {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
