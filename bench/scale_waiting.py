"""Scale benchmark, waiting: what thousands of parked long polls cost, and how fast they wake.

One daemon process (`hitl-bridge serve`, fresh SQLite store) takes N requests, then N clients
long-poll them (`GET /v1/requests/{id}?wait=…`, raw asyncio streams from this process, one
connection each) and nothing happens for a while:
  - idle CPU of the daemon (% of one core over IDLE_S seconds, from /proc/<pid>/stat)
  - RSS per waiter ((RSS with N parked polls - RSS before them) / N)
  - wake-up: SAMPLES of the parked requests are answered one after another; the time from the
    answer POST to that long poll's response arriving, p50 / p99
The same N requests waited on through watch streams instead (`POST /v1/requests:watch`, many
waits on one connection: STREAMS streams of N / STREAMS ids each, a fresh daemon): idle CPU,
RSS per waiting request, and wake-up from the answer POST to that request's `closed` event.
Then two daemons on one fresh PostgreSQL database (replicas A and B): long polls parked on B,
answers POSTed on A, time from each answer POST to the poll on B returning, p50 / p99; and
the same through one watch stream on B.

Usage: .venv/bin/python bench/scale_waiting.py [--quick]   (--quick: 1,000 waiters, shorter idle)
PostgreSQL: HITL_BENCH_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/postgres) is
used to create and drop a database of its own; without a server the cross-replica rows say so.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).parent))
from bench_core import BODY, free_port, pct, serve_process
from scale_lib import Figure, table

AREA = "waiting"
WAIT_S = 110  # each long poll's wait (the API allows up to 120 s)
STREAMS = 10  # watch streams the N waiting requests are spread over
STREAM_WAIT_S = 600
PG_ADMIN = os.environ.get("HITL_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Daemon:
    base: str
    port: int
    proc: subprocess.Popen[bytes]

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0


def raise_fd_limit() -> int:
    """Open-file limit up to the hard limit (inherited by the daemons started after)."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


@contextlib.asynccontextmanager
async def daemon(store_url: str, tmp: Path, name: str) -> AsyncIterator[Daemon]:
    port = free_port()
    config = (f"store: {{url: '{store_url}'}}\n"
              f"http: {{listen: '127.0.0.1:{port}', max_connections: 15000}}\n"
              "sources: [{type: webhook}]\nlog_level: WARNING\n")
    async with serve_process(tmp, port, config, name) as proc:
        yield Daemon(f"http://127.0.0.1:{port}", port, proc)


async def create(base: str, count: int, concurrency: int = 16) -> list[str]:
    ids: list[str] = []
    numbers = iter(range(count))
    tag = secrets.token_hex(4)
    async with httpx.AsyncClient(base_url=base, timeout=60,
                                 limits=httpx.Limits(max_connections=concurrency)) as http:
        async def worker() -> None:
            for i in numbers:
                r = await http.post("/v1/requests", json={**BODY, "external_id": f"wait-{tag}-{i}"})
                r.raise_for_status()
                ids.append(r.json()["id"])

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ids


class Polls:
    """One raw HTTP/1.1 connection per long poll; `returned[id]` is when its response arrived."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.returned: dict[str, float] = {}
        self.done: dict[str, asyncio.Event] = {}
        self.writers: list[asyncio.StreamWriter] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.sent = 0

    async def park(self, ids: list[str], batch: int = 200) -> None:
        for start in range(0, len(ids), batch):
            await asyncio.gather(*(self._open(rid) for rid in ids[start:start + batch]))

    async def _open(self, rid: str) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers.append(writer)
        self.done[rid] = asyncio.Event()
        writer.write(f"GET /v1/requests/{rid}?wait={WAIT_S} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        await writer.drain()
        self.sent += 1
        self.tasks.append(asyncio.ensure_future(self._read(rid, reader)))

    async def _read(self, rid: str, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(Exception):
            await reader.readuntil(b"\r\n\r\n")
            self.returned[rid] = time.perf_counter()
        self.done[rid].set()

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for writer in self.writers:
            writer.close()
        await asyncio.gather(*self.tasks, return_exceptions=True)


class Streams:
    """Watch streams over `ids` (one connection each); `returned[id]` is when its `closed` event arrived."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.returned: dict[str, float] = {}
        self.done: dict[str, asyncio.Event] = {}
        self.tasks: list[asyncio.Task[None]] = []
        self.opened = 0
        self._http = httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(60, read=None),
                                       limits=httpx.Limits(max_connections=STREAMS * 4))

    async def open(self, ids: list[str], streams: int) -> None:
        size = -(-len(ids) // streams)
        for rid in ids:
            self.done[rid] = asyncio.Event()
        begun = [asyncio.Event() for _ in range(0, len(ids), size)]
        for n, start in enumerate(range(0, len(ids), size)):
            self.tasks.append(asyncio.ensure_future(self._read(ids[start:start + size], begun[n])))
        for event in begun:
            await asyncio.wait_for(event.wait(), 120)

    async def _read(self, ids: list[str], begun: asyncio.Event) -> None:
        with contextlib.suppress(Exception):
            async with self._http.stream("POST", "/v1/requests:watch",
                                         json={"ids": ids, "wait": STREAM_WAIT_S}) as response:
                response.raise_for_status()
                self.opened += 1
                begun.set()
                kind = ""
                async for line in response.aiter_lines():
                    if line.startswith("event:"):
                        kind = line[6:].strip()
                    elif line.startswith("data:") and kind == "closed":
                        rid = json.loads(line[5:])["id"]
                        self.returned[rid] = time.perf_counter()
                        self.done[rid].set()
        begun.set()

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self._http.aclose()


async def wake_ups(answer_base: str, polls: Polls | Streams, ids: list[str]) -> list[float]:
    """Answer each of `ids` in turn; ms from the answer POST to its poll's response."""
    samples: list[float] = []
    async with httpx.AsyncClient(base_url=answer_base, timeout=30) as http:
        for rid in ids:
            began = time.perf_counter()
            r = await http.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})
            r.raise_for_status()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(polls.done[rid].wait(), timeout=5)
            if rid in polls.returned:
                samples.append((polls.returned[rid] - began) * 1000)
            else:
                samples.append(5000.0)  # not woken within 5 s: counted as 5 s
    return samples


async def settle(d: Daemon, seconds: float) -> None:
    """Wait until the daemon's CPU use calms down (parked polls reach it), at most `seconds`."""
    end = time.monotonic() + seconds
    last = d.cpu_s()
    while time.monotonic() < end:
        await asyncio.sleep(1.0)
        now = d.cpu_s()
        if now - last < 0.3:
            return
        last = now


@dataclass
class Parked:
    """What parked waits cost and how fast they woke (`park_and_wake`)."""

    rss_before: int  # KiB, before the waits
    rss_parked: int  # KiB, with them parked
    idle: float  # % of a core while nothing happens
    early: int  # waits that returned before any answer
    wake: list[float]  # ms, answer POST → its wait returning
    cpu_wake: float  # ms of daemon CPU per answer and its wake-up


async def park_and_wake(store_url: str, tmp: Path, count: int, idle_s: float,
                        parked: Callable[[Daemon, list[str]], Awaitable[Polls | Streams]],
                        sample: Callable[[list[str]], list[str]]) -> Parked:
    """A fresh daemon with `count` requests: before/after RSS of `parked` waits on them, its
    idle CPU over `idle_s`, then the `sample` of them answered one after another."""
    async with daemon(store_url, tmp, "daemon") as d:
        ids = await create(d.base, count)
        await settle(d, 10)
        rss_before = d.rss_kib()
        waits = await parked(d, ids)
        try:
            await settle(d, 20)
            await asyncio.sleep(2)
            rss_parked = d.rss_kib()
            cpu0, t0 = d.cpu_s(), time.monotonic()
            await asyncio.sleep(idle_s)
            idle = (d.cpu_s() - cpu0) / (time.monotonic() - t0) * 100
            early = len(waits.returned)
            cpu1 = d.cpu_s()
            wake = await wake_ups(d.base, waits, sample(ids))
            cpu_wake = (d.cpu_s() - cpu1) / len(wake) * 1000
        finally:
            await waits.close()
    return Parked(rss_before, rss_parked, idle, early, wake, cpu_wake)


async def parked_polls(d: Daemon, ids: list[str]) -> Polls:
    polls = Polls(d.port)
    try:
        await polls.park(ids)
    except BaseException:
        await polls.close()
        raise
    return polls


async def sqlite_waiting(waiters: int, idle_s: float, samples: int) -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        got = await park_and_wake(f"sqlite:///{tmp}/bridge.db", tmp, waiters, idle_s, parked_polls,
                                  lambda ids: ids[:samples])
    per_waiter = (got.rss_parked - got.rss_before) / waiters
    n = f"{waiters:,}"
    return [
        Figure(AREA, f"idle CPU, {n} long polls (SQLite, {idle_s:.0f} s)", f"{got.idle:.1f} % of a core",
               "≈ 0 (≤ 5 %)", got.idle <= 5),
        # one HTTP/1.1 connection each: the waits over watch streams below are what meets "a few KiB"
        Figure(AREA, f"RSS per waiter, {n} long polls (one connection each, for comparison)",
               f"{per_waiter:.1f} KiB ({got.rss_before // 1024} → {got.rss_parked // 1024} MiB)", "-"),
        Figure(AREA, f"wake-up answer → long poll, p50 ({len(got.wake)} of {n})",
               f"{pct(got.wake, 0.5):.1f} ms",
               "ms (≤ 10)", pct(got.wake, 0.5) <= 10),
        Figure(AREA, f"wake-up answer → long poll, p99 ({len(got.wake)} of {n})",
               f"{pct(got.wake, 0.99):.1f} ms",
               "ms", None),
        Figure(AREA, "daemon CPU per answer + its long poll's wake-up", f"{got.cpu_wake:.2f} ms", "ms", None),
        *([Figure(AREA, "long polls that returned before any answer", str(got.early), "0", got.early == 0)]
          if got.early else []),
    ]


async def sqlite_streams(waiting: int, idle_s: float, samples: int) -> list[Figure]:
    """The same waits as `sqlite_waiting`, over STREAMS watch streams on a fresh daemon."""
    opened: list[int] = []

    async def parked(d: Daemon, ids: list[str]) -> Streams:
        streams = Streams(d.base)
        try:
            await streams.open(ids, STREAMS)
        except BaseException:
            await streams.close()
            raise
        opened.append(streams.opened)
        return streams

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        got = await park_and_wake(f"sqlite:///{tmp}/bridge.db", tmp, waiting, idle_s, parked,
                                  lambda ids: ids[::max(1, waiting // samples)][:samples])  # every stream
    per_wait = (got.rss_parked - got.rss_before) / waiting
    n = f"{waiting:,}"
    how = f"{n} waits over {opened[0]} streams of {waiting // STREAMS:,}"
    return [
        Figure(AREA, f"idle CPU, {how} (SQLite, {idle_s:.0f} s)", f"{got.idle:.2f} % of a core", "≈ 0 (≤ 1 %)",
               got.idle <= 1),
        Figure(AREA, f"RSS per waiting request, {how}", f"{per_wait:.2f} KiB ({got.rss_before // 1024} → "
               f"{got.rss_parked // 1024} MiB)", "≤ 4 KiB", per_wait <= 4),
        Figure(AREA, f"wake-up answer → closed event, p50 ({len(got.wake)} of {n})",
               f"{pct(got.wake, 0.5):.1f} ms",
               "ms", None),
        Figure(AREA, f"wake-up answer → closed event, p99 ({len(got.wake)} of {n})",
               f"{pct(got.wake, 0.99):.1f} ms",
               "≤ 20 ms", pct(got.wake, 0.99) <= 20),
        Figure(AREA, "daemon CPU per answer + its closed event", f"{got.cpu_wake:.2f} ms", "ms", None),
        *([Figure(AREA, "streamed requests reported before any answer", str(got.early), "0", got.early == 0)]
          if got.early else []),
    ]


@contextlib.asynccontextmanager
async def pg_database() -> AsyncIterator[str]:
    name = f"hitl_bench_wake_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(PG_ADMIN, timeout=5)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    parts = urllib.parse.urlsplit(PG_ADMIN)
    try:
        yield urllib.parse.urlunsplit(parts._replace(path=f"/{name}", query=""))
    finally:
        admin = await asyncpg.connect(PG_ADMIN, timeout=5)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


async def cross_replica(samples: int) -> list[Figure]:
    try:
        async with pg_database() as url, contextlib.AsyncExitStack() as stack:
            with tempfile.TemporaryDirectory() as tmp_name:
                tmp = Path(tmp_name)
                a = await stack.enter_async_context(daemon(url, tmp, "a"))
                b = await stack.enter_async_context(daemon(url, tmp, "b"))
                ids = await create(a.base, samples)
                polls = Polls(b.port)
                try:
                    await polls.park(ids)
                    await asyncio.sleep(1.5)  # every poll reaches B and parks
                    wake = await wake_ups(a.base, polls, ids)
                finally:
                    await polls.close()
                ids = await create(a.base, samples)
                streams = Streams(b.base)
                try:
                    await streams.open(ids, 1)  # every id registered on B once the response began
                    streamed = await wake_ups(a.base, streams, ids)
                finally:
                    await streams.close()
    except (OSError, asyncpg.PostgresError) as exc:
        return [Figure(AREA, "cross-replica wake-up (PostgreSQL)", f"not measured: {exc}", "p50 ≤ 50 ms", None)]
    return [
        Figure(AREA, f"cross-replica wake-up A → stream on B, p50 ({len(streamed)}, PostgreSQL)",
               f"{pct(streamed, 0.5):.1f} ms", "≤ 50 ms (as a long poll)", pct(streamed, 0.5) <= 50),
        Figure(AREA, f"cross-replica wake-up A → stream on B, p99 ({len(streamed)}, PostgreSQL)",
               f"{pct(streamed, 0.99):.1f} ms", "ms", None),
        Figure(AREA, f"cross-replica wake-up A → B, p50 ({len(wake)}, PostgreSQL)", f"{pct(wake, 0.5):.1f} ms",
               "≤ 50 ms", pct(wake, 0.5) <= 50),
        Figure(AREA, f"cross-replica wake-up A → B, p99 ({len(wake)}, PostgreSQL)", f"{pct(wake, 0.99):.1f} ms",
               "ms", None),
    ]


async def measure(quick: bool) -> list[Figure]:
    raise_fd_limit()
    waiters = 1_000 if quick else 10_000
    figures = await sqlite_waiting(waiters, idle_s=5 if quick else 10, samples=100 if quick else 200)
    figures += await sqlite_streams(waiters, idle_s=5 if quick else 30, samples=100 if quick else 200)
    figures += await cross_replica(50 if quick else 200)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1,000 waiters, 5 s idle, fewer samples")
    args = parser.parse_args()
    print(table(asyncio.run(measure(args.quick))))


if __name__ == "__main__":
    main()
