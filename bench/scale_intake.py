"""Scale benchmark, intake part (issue 19): how fast `POST /v1/requests` goes, and what it costs.

Runs `hitl-bridge serve` as its own process(es) on 127.0.0.1 (bench_core.daemon_process: the
default config with a webhook source, so every request is also posted to the web inbox) and
sends N creates from 16 keep-alive connections:

  - SQLite, one daemon (issue 34): creates/s (target ≥ 6,000/s on 2 cores), p99 latency
    (≤ 20 ms), and the daemon's whole CPU per create, all threads, read from /proc (≤ 0.17 ms:
    the figure that holds on a busy machine), split into event loop and other threads; the
    same at the default INFO log level
  - the kill -9 check (bench/intake_kill.py): SIGKILL under full load, restart on the same
    file, every create answered 201 looked up (target: 0 lost)
  - PostgreSQL, 1, 2 and 3 replicas: bench/scale_replicas.py (run from here too)

The load generator is one process with raw HTTP/1.1 keep-alive connections on asyncio
Protocols (a prepared request, a response read by Content-Length): about 30 µs of CPU per
request, so on 2 cores it leaves the daemon its core. The output says how much of a core
the client itself used.

Usage: .venv/bin/python bench/scale_intake.py [--quick] [--profile intake.svg]
(--profile: py-spy records the SQLite daemon during its measured run; needs py-spy.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import BODY, daemon_process, pct
from scale_lib import Figure, table

AREA = "intake"
CLIENTS = 16
TARGET_RATE = 6000.0  # issue 34: ≥ 6,000 creates/s with 16 clients on 2 cores
TARGET_P99_MS = 20.0
TARGET_CPU_MS = 0.17  # the daemon's whole CPU per create that 6,000/s on 2 cores allows
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Load:
    """What one load run measured."""

    count: int
    seconds: float
    latencies_ms: list[float]
    statuses: dict[int, int]
    client_cpu_s: float

    @property
    def rate(self) -> float:
        return self.count / self.seconds

    @property
    def client_cores(self) -> float:
        return self.client_cpu_s / self.seconds

    @property
    def failed(self) -> int:
        return sum(n for status, n in self.statuses.items() if status not in (200, 201))


class Connection(asyncio.Protocol):
    """One keep-alive connection: send a create, read its response, send the next."""

    def __init__(self, host: str, requests: Iterator[int], latencies: list[float], statuses: dict[int, int],
                 prefix: str) -> None:
        self.head = f"POST /v1/requests HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        self.requests = requests
        self.latencies = latencies
        self.statuses = statuses
        self.prefix = prefix
        self.buffer = b""
        self.sent_at = 0.0
        self.in_flight: str | None = None  # the external_id of the create sent and not yet answered
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.send_next()

    def send_next(self) -> None:
        assert self.transport is not None
        n = next(self.requests, None)
        if n is None:
            self.transport.close()
            return
        self.in_flight = f"{self.prefix}-{n}"
        body = json.dumps({**BODY, "external_id": self.in_flight}).encode()
        self.sent_at = time.perf_counter()
        self.transport.write(f"{self.head}Content-Length: {len(body)}\r\n\r\n".encode() + body)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1").lower()
            length = 0
            for line in head.split("\r\n")[1:]:
                if line.startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            if len(self.buffer) < end + 4 + length:
                return
            body, self.buffer = self.buffer[end + 4:end + 4 + length], self.buffer[end + 4 + length:]
            status = int(head.split(" ", 2)[1])
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.latencies.append((time.perf_counter() - self.sent_at) * 1000)
            self.answered(status, body)
            self.in_flight = None
            self.send_next()

    def answered(self, status: int, body: bytes) -> None:
        """A response arrived (a subclass may look at it: bench/intake_kill.py)."""

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def load(ports: list[int], total: int, prefix: str, clients: int = CLIENTS,
               kind: type[Connection] = Connection) -> Load:
    """`total` creates over `clients` keep-alive connections, spread round-robin on `ports`."""
    loop = asyncio.get_running_loop()
    requests = iter(range(total))
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    cpu0, start = time.process_time(), time.perf_counter()
    connections = []
    for i in range(clients):
        port = ports[i % len(ports)]
        _transport, connection = await loop.create_connection(
            lambda port=port: kind(f"127.0.0.1:{port}", requests, latencies, statuses, prefix),  # type: ignore[misc]
            "127.0.0.1", port)
        connections.append(connection)
    await asyncio.gather(*(c.done for c in connections))
    seconds = time.perf_counter() - start
    return Load(len(latencies), seconds, latencies, statuses, time.process_time() - cpu0)


def children_named(word: str) -> list[int]:
    """Pids of this process's children whose command line holds `word` (the daemons)."""
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me and word.encode() in cmdline:
            found.append(int(entry.name))
    return found


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """utime + stime of a process, or of one of its threads (the main thread: the event loop)."""
    path = f"/proc/{pid}/task/{thread}/stat" if thread is not None else f"/proc/{pid}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


@contextlib.asynccontextmanager
async def daemons(store_url: str, count: int, log_level: str = "WARNING") -> AsyncIterator[list[tuple[int, int]]]:
    """`count` daemons on `store_url`: yields (port, pid) of each."""
    async with contextlib.AsyncExitStack() as stack:
        out = []
        for _ in range(count):
            tmp = stack.enter_context(tempfile.TemporaryDirectory())
            before = set(children_named("hitl-bridge"))
            base, _log = await stack.enter_async_context(daemon_process(store_url, tmp, log_level))
            [pid] = set(children_named("hitl-bridge")) - before
            out.append((int(base.rsplit(":", 1)[1]), pid))
        yield out


@contextlib.contextmanager
def profiling(pid: int, output: str | None) -> Iterator[None]:
    """py-spy records `pid` while the block runs (nothing when `output` is None)."""
    if output is None:
        yield
        return
    fmt = {".json": "speedscope", ".txt": "raw"}.get(Path(output).suffix, "flamegraph")
    spy = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--output", output, "--format", fmt,
                            "--rate", "250", "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.5)  # py-spy attaches
    try:
        yield
    finally:
        spy.send_signal(2)  # SIGINT: py-spy writes the profile and exits
        spy.wait(timeout=60)


async def sqlite_figures(total: int, warmup: int, profile: str | None, log_level: str = "WARNING") -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        async with daemons(f"sqlite:///{tmp}/bridge.db", 1, log_level) as [(port, pid)]:
            await load([port], warmup, "warm")
            commits0 = await group_commits(port)
            loop0, proc0 = cpu_seconds(pid, pid), cpu_seconds(pid)
            with profiling(pid, profile):
                run = await load([port], total, "run")
            loop_cpu, proc_cpu = cpu_seconds(pid, pid) - loop0, cpu_seconds(pid) - proc0
            commits1 = await group_commits(port)
    commits, writes = commits1[0] - commits0[0], commits1[1] - commits0[1]
    p99 = pct(run.latencies_ms, 0.99)
    whole, main = proc_cpu / run.count * 1000, loop_cpu / run.count * 1000
    return [
        Figure(AREA, f"SQLite intake, {CLIENTS} clients, {run.count:,} creates ({run.failed} failed)",
               f"{run.rate:,.0f}/s", f"≥ {TARGET_RATE:,.0f}/s", run.rate >= TARGET_RATE and run.failed == 0),
        Figure(AREA, "SQLite intake latency p50 / p99", f"{pct(run.latencies_ms, 0.5):.1f} / {p99:.1f} ms",
               f"p99 ≤ {TARGET_P99_MS:.0f} ms", p99 <= TARGET_P99_MS),
        Figure(AREA, "daemon CPU per create (whole process, all threads; holds on a busy machine)",
               f"{whole:.3f} ms", f"≤ {TARGET_CPU_MS:.2f} ms", whole <= TARGET_CPU_MS),
        Figure(AREA, "… of which the event loop (main thread) / other threads (SQLite writer, reader, WAL)",
               f"{main:.3f} / {whole - main:.3f} ms", "-"),
        Figure(AREA, "load generator (1 process, raw keep-alive)", f"{run.client_cores:.2f} of a core", "-"),
        Figure(AREA, "SQLite writes per commit (group commit: creates, and anything else written meanwhile)",
               f"{writes / max(commits, 1):.1f} ({writes:,} in {commits:,} commits)", "-"),
    ]


async def group_commits(port: int) -> tuple[int, int]:
    """(commits, writes) the daemon's store counted so far, read from its /metrics."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        text = (await client.get("/metrics")).text
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("hitl_store_commits_total", "hitl_store_writes_total"):
            found[name] = int(float(value))
    return found.get("hitl_store_commits_total", 0), found.get("hitl_store_writes_total", 0)


async def measure(quick: bool, profile: str | None = None, stores: tuple[str, ...] = ("sqlite",),
                  ) -> list[Figure]:
    """The intake figures; `quick`: fewer requests (a few seconds per run). By default SQLite
    only: bench_limits.py runs the replicas (PostgreSQL) as a part of their own."""
    total, warmup = (4000, 500) if quick else (20000, 2000)
    figures = await sqlite_figures(total, warmup, profile) if "sqlite" in stores else []
    if "sqlite" in stores:  # the same at the default log level: two INFO lines per create
        info = await sqlite_figures(total // 2, warmup, None, "INFO")
        figures.append(Figure(AREA, f"SQLite intake with INFO logs (the default), {CLIENTS} clients",
                              f"{info[0].value}, p99 {info[1].value.split(' / ')[1]}, {info[2].value} CPU/create",
                              f"≥ {TARGET_RATE:,.0f}/s, ≤ {TARGET_CPU_MS:.2f} ms", info[0].met and info[2].met))
        import intake_kill

        figures += await intake_kill.kill_check(total // 2)
    if "postgres" in stores:  # the replica figures live in scale_replicas.py (issue 34's own part)
        import scale_replicas

        figures += await scale_replicas.measure(quick)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer requests per run")
    parser.add_argument("--profile", help="py-spy output for the SQLite daemon (.svg flame graph, .json "
                                          "speedscope, .txt collapsed stacks)")
    parser.add_argument("--only", choices=("sqlite", "postgres"), help="measure one store only")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; machine load {os.getloadavg()[0]:.2f} at start (the machine may be shared)")
    print(table(asyncio.run(measure(args.quick, args.profile, (args.only,) if args.only else ("sqlite", "postgres")))))


if __name__ == "__main__":
    main()
