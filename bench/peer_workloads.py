"""The peer comparison's workloads: each drives one server (a `Peer`) the same way and returns
its readings as {metric key: value}. The keys are the metrics of bench/peer_report.py.

  - idle memory                    RSS of the fresh server after it settles
  - intake                         N creates from 16 keep-alive clients (scale_intake's raw load
                                   generator): creates/s (successful ones), failures, p50/p99, the
                                   server's CPU per 1,000 creates, the RSS with those requests open
  - answer → callback              requests with a callback, answered open-loop (one every 100 ms):
                                   answer POST sent → callback received, p50/p99; the server's CPU
                                   per 1,000 requests over their whole life (create, answer, callback)
  - answer → long-poll             the same with a waiting long poll instead of a callback
  - burst                          100 answers sent at once: until the last callback arrives
  - deadline                       requests with a 60 s deadline, never answered: how late after
                                   the deadline their callback arrives, p50/p99
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
from bench_core import pct
from peer_servers import Peer
from scale_intake import CLIENTS, Connection, Load, cpu_seconds
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bridge.http.loopback import serving

Readings = dict[str, float]
OPEN_TIMEOUT_S = 3600  # intake's requests stay open: both servers get the same 1 h deadline
DEADLINE_S = 60  # awaithumans' shortest timeout (MIN_TIMEOUT_SECONDS)
ANSWER_EVERY_S = 0.1  # open-loop answers: one every 100 ms, on both
SETTLE_S = 2.0


def rss_mib(pid: int) -> float:
    """Resident memory of a process (all its threads), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


class Receiver:
    """The local callback receiver both servers post to: when each request's first callback came."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}  # request id → time.monotonic() of its first callback
        self.changed = asyncio.Event()
        self.port = 0

    async def hook(self, request: Request) -> Response:
        await request.body()
        rid = request.headers.get("x-hitl-request-id") or request.headers.get("x-awaithumans-task-id")
        if rid and rid not in self.arrived:
            self.arrived[rid] = time.monotonic()
            self.changed.set()
        return Response(status_code=204)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def wait_for(self, ids: list[str], within_s: float) -> dict[str, float]:
        """Arrival times of `ids`' callbacks; raises when they have not all come within `within_s`."""
        deadline = time.monotonic() + within_s
        while missing := [i for i in ids if i not in self.arrived]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{len(missing)} of {len(ids)} callbacks did not arrive within {within_s:.0f} s")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), timeout=min(left, 1.0))
        return {i: self.arrived[i] for i in ids}


@contextlib.asynccontextmanager
async def receiving() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = Starlette(routes=[Route("/hook", receiver.hook, methods=["POST"])])
    async with serving(app, "the callback receiver") as port:
        receiver.port = port
        yield receiver


class PeerConnection(Connection):
    """scale_intake's keep-alive connection, creating on `peer` (its path, body and token). Counts
    what it sends, and knows whether it ended because the work ran out or the server closed it."""

    def __init__(self, peer: Peer, requests: Iterator[int], latencies: list[float], statuses: dict[int, int],
                 prefix: str, sent: list[int]) -> None:
        host = peer.base.removeprefix("http://")
        super().__init__(host, requests, latencies, statuses, prefix)
        self.peer = peer
        self.sent = sent
        self.exhausted = False
        self.closing_after = False
        self.head = (f"POST {peer.create_path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                     f"Authorization: Bearer {peer.token}\r\n")

    def data_received(self, data: bytes) -> None:
        # A response saying `Connection: close` (uvicorn's after a 500) ends this connection: the
        # client sends nothing more on it and opens another, as an HTTP client does.
        self.closing_after |= b"\r\nconnection: close\r\n" in data.lower()
        super().data_received(data)

    def send_next(self) -> None:
        assert self.transport is not None
        if self.closing_after or self.transport.is_closing():
            self.transport.close()
            return
        n = next(self.requests, None)
        if n is None:
            self.exhausted = True
            self.transport.close()
            return
        body = json.dumps(self.peer.create_body(f"{self.prefix}-{n}", timeout_s=OPEN_TIMEOUT_S)).encode()
        self.sent_at = time.perf_counter()
        self.sent[0] += 1
        self.transport.write(f"{self.head}Content-Length: {len(body)}\r\n\r\n".encode() + body)


async def load(peer: Peer, total: int, prefix: str) -> tuple[Load, int]:
    """`total` creates on `peer` from CLIENTS keep-alive clients (as scale_intake.load); a client
    whose connection the server closes opens another, as an HTTP client would. Returns the load
    and how many creates were sent (those sent and never answered were lost with a connection)."""
    loop = asyncio.get_running_loop()
    requests = iter(range(total))
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    sent = [0]
    host, port = peer.base.removeprefix("http://").rsplit(":", 1)

    async def client() -> None:
        while True:
            _transport, protocol = await loop.create_connection(
                lambda: PeerConnection(peer, requests, latencies, statuses, prefix, sent), host, int(port))
            await protocol.done
            if protocol.exhausted:
                return

    cpu0, start = time.process_time(), time.perf_counter()
    await asyncio.gather(*(client() for _ in range(CLIENTS)))
    return Load(len(latencies), time.perf_counter() - start, latencies, statuses, time.process_time() - cpu0), sent[0]


def log_errors(peer: Peer) -> Readings:
    """Tracebacks in the server's output so far (both log at WARNING)."""
    text = peer.log.read_text(errors="replace") if peer.log.exists() else ""
    return {"log_errors": text.count("Traceback (most recent call last)")}


async def idle_memory(peer: Peer) -> Readings:
    await asyncio.sleep(SETTLE_S)  # let start-up work (migrations, first ticks) finish
    return {"rss_idle": rss_mib(peer.pid)}


async def intake(peer: Peer, total: int, warmup: int) -> Readings:
    """`warmup` then `total` creates; the RSS afterwards, with `warmup + total` requests open."""
    await load(peer, warmup, "warm")
    cpu0 = cpu_seconds(peer.pid)
    run, sent = await load(peer, total, "run")
    cpu = cpu_seconds(peer.pid) - cpu0
    failed = run.failed + sent - run.count  # answered other than 201, or never answered
    if failed:
        print(f"  {peer.name}: {failed} of {total} creates failed: {run.statuses}, "
              f"{sent - run.count} never answered", flush=True)
    await asyncio.sleep(SETTLE_S)
    return {"intake_failed": failed, "intake_rate": (run.count - run.failed) / run.seconds,
            "intake_p50": pct(run.latencies_ms, 0.5), "intake_p99": pct(run.latencies_ms, 0.99),
            "cpu_create": cpu / run.count * 1000, "rss_open": rss_mib(peer.pid)}


async def create(client: aiohttp.ClientSession, peer: Peer, key: str, timeout_s: int,
                 callback_url: str | None = None) -> str:
    async with client.post(peer.create_path, json=peer.create_body(key, timeout_s=timeout_s,
                                                                    callback_url=callback_url)) as r:
        if r.status != 201:
            raise RuntimeError(f"{peer.name}: create answered {r.status}: {(await r.text())[:300]}")
        return str((await r.json())["id"])


async def answer(client: aiohttp.ClientSession, peer: Peer, request_id: str) -> float:
    """Answers "yes"; returns when the answer was sent (time.monotonic())."""
    path, body = peer.answer_call(request_id)
    sent = time.monotonic()
    async with client.post(path, json=body) as r:
        if r.status != 200:
            raise RuntimeError(f"{peer.name}: answer answered {r.status}: {(await r.text())[:300]}")
        await r.read()
    return sent


async def open_loop(client: aiohttp.ClientSession, peer: Peer, ids: list[str]) -> dict[str, float]:
    """Answers `ids`, one every ANSWER_EVERY_S whether or not the last is through: {id: sent at}."""
    start = time.monotonic()

    async def one(i: int, rid: str) -> tuple[str, float]:
        await asyncio.sleep(max(0.0, start + i * ANSWER_EVERY_S - time.monotonic()))
        return rid, await answer(client, peer, rid)

    return dict(await asyncio.gather(*(one(i, rid) for i, rid in enumerate(ids))))


def session(peer: Peer) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(peer.base, headers=peer.headers, connector=aiohttp.TCPConnector(limit=200),
                                 timeout=aiohttp.ClientTimeout(total=120))


async def callback_latency(peer: Peer, receiver: Receiver, count: int, tag: str) -> Readings:
    async with session(peer) as client:
        cpu0 = cpu_seconds(peer.pid)
        ids = [await create(client, peer, f"{tag}-cb-{i}", OPEN_TIMEOUT_S, receiver.url) for i in range(count)]
        sent = await open_loop(client, peer, ids)
        arrived = await receiver.wait_for(ids, within_s=120)
        cpu = cpu_seconds(peer.pid) - cpu0
    ms = [(arrived[i] - sent[i]) * 1000 for i in ids]
    return {"callback_p50": pct(ms, 0.5), "callback_p99": pct(ms, 0.99), "cpu_lifecycle": cpu / count * 1000}


async def wait_latency(peer: Peer, count: int, tag: str) -> Readings:
    """Long polls waiting on `count` requests, then the answers (open-loop): answer sent → poll returns."""
    async with session(peer) as client:
        ids = [await create(client, peer, f"{tag}-lp-{i}", OPEN_TIMEOUT_S) for i in range(count)]
        returned: dict[str, float] = {}

        async def wait(rid: str) -> None:
            while True:
                async with client.get(peer.wait_path(rid, 30)) as r:
                    reply = await r.json()
                if r.status != 200:
                    raise RuntimeError(f"{peer.name}: long poll answered {r.status}: {reply}")
                if peer.wait_state(reply) in peer.wait_terminal:
                    returned[rid] = time.monotonic()
                    return

        waits = [asyncio.create_task(wait(rid)) for rid in ids]
        await asyncio.sleep(SETTLE_S)  # the polls are parked on the server
        sent = await open_loop(client, peer, ids)
        await asyncio.wait_for(asyncio.gather(*waits), timeout=120)
    ms = [(returned[i] - sent[i]) * 1000 for i in ids]
    return {"wait_p50": pct(ms, 0.5), "wait_p99": pct(ms, 0.99)}


async def burst(peer: Peer, receiver: Receiver, count: int, tag: str) -> Readings:
    """`count` answers sent at once: from the first sent to the last callback received."""
    async with session(peer) as client:
        ids = [await create(client, peer, f"{tag}-burst-{i}", OPEN_TIMEOUT_S, receiver.url) for i in range(count)]
        start = time.monotonic()
        await asyncio.gather(*(answer(client, peer, rid) for rid in ids))
        arrived = await receiver.wait_for(ids, within_s=120)
    return {"burst_last": (max(arrived.values()) - start) * 1000}


async def deadline_lateness(peer: Peer, receiver: Receiver, count: int, tag: str) -> Readings:
    """`count` requests with a DEADLINE_S deadline, never answered: callback arrival − deadline. The
    deadline is counted from when the create was sent (so lateness is, if anything, overstated)."""
    async with session(peer) as client:
        due: dict[str, float] = {}
        for i in range(count):
            sent = time.monotonic()
            due[await create(client, peer, f"{tag}-dl-{i}", DEADLINE_S, receiver.url)] = sent + DEADLINE_S
        arrived = await receiver.wait_for(list(due), within_s=DEADLINE_S + 120)
    ms = [(arrived[i] - due[i]) * 1000 for i in due]
    return {"deadline_p50": pct(ms, 0.5), "deadline_p99": pct(ms, 0.99)}
