"""Core benchmark: intake throughput and answer→callback latency (prints figures).

Runs `hitl-bridge serve` as its own process on 127.0.0.1 with a fresh SQLite store, then:
  1. intake: N requests POSTed by 16 concurrent clients → requests/s, 5xx count, "database is locked" in the log
  2. latency: 1,000 requests with callbacks; each answered, time from the answer POST to the signed
     callback arriving at a local receiver → p50 / p99 / max

Usage: .venv/bin/python bench/bench_core.py [--requests 5000] [--latency 1000]
Targets (issue 2): intake ≥ 1,000 req/s, 0 5xx, 0 "database is locked"; callback p50 ≤ 10 ms, p99 ≤ 30 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bridge.http.loopback import serving

BODY = {"title": "Deploy api to prod?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}],
        "context": {"service": "api", "version": "1.2.3"}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_up(url: str) -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(300):
            try:
                if (await client.get(url + "/healthz")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.05)
    raise RuntimeError("daemon did not start")


async def intake(base: str, total: int, concurrency: int) -> tuple[float, int, int]:
    counter = iter(range(total))
    errors_5xx = 0
    other = 0
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(base, connector=connector) as client:
        async def worker() -> None:
            nonlocal errors_5xx, other
            for i in counter:
                async with client.post("/v1/requests", json={**BODY, "external_id": f"bench-{i}"}) as r:
                    await r.read()
                    if r.status >= 500:
                        errors_5xx += 1
                    elif r.status != 201:
                        other += 1

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
    return total / elapsed, errors_5xx, other


async def latency(base: str, count: int) -> list[float]:
    arrived: dict[str, float] = {}
    events: dict[str, asyncio.Event] = {}

    async def hook(request: Request) -> Response:
        rid = request.headers["x-hitl-request-id"]
        arrived[rid] = time.perf_counter()
        events.setdefault(rid, asyncio.Event()).set()
        await request.body()
        return Response(status_code=204)

    samples: list[float] = []
    receiver = Starlette(routes=[Route("/hook", hook, methods=["POST"])])
    async with serving(receiver, "the callback receiver") as port, aiohttp.ClientSession(base) as client:
        for i in range(count):
            async with client.post("/v1/requests", json={**BODY, "external_id": f"lat-{i}", "callback": {
                    "url": f"http://127.0.0.1:{port}/hook", "secret": "bench-secret-0123456789"}}) as r:
                rid = (await r.json())["id"]
            event = events.setdefault(rid, asyncio.Event())
            start = time.perf_counter()
            async with client.post(f"/v1/requests/{rid}/answer", json={"value": "yes"}) as r:
                await r.read()
            await asyncio.wait_for(event.wait(), timeout=10)
            samples.append((arrived[rid] - start) * 1000)
    return samples


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


@contextlib.asynccontextmanager
async def serve_process(tmp: Path, port: int, config: str,
                        name: str = "daemon") -> AsyncIterator[subprocess.Popen[bytes]]:
    """`hitl-bridge serve` as its own process on `config` (written to tmp/<name>.yaml, its
    output to tmp/<name>.log), once http://127.0.0.1:`port` answers; stopped after the block."""
    path = tmp / f"{name}.yaml"
    path.write_text(config)
    exe = Path(sys.executable).parent / "hitl-bridge"
    with (tmp / f"{name}.log").open("w") as out:
        proc = subprocess.Popen([str(exe), "-c", str(path), "serve"], stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=tmp)
        try:
            await wait_up(f"http://127.0.0.1:{port}")
            yield proc
        finally:
            stop(proc)


@contextlib.asynccontextmanager
async def daemon_process(store_url: str, tmp: str, log_level: str = "WARNING") -> AsyncIterator[tuple[str, Path]]:
    """`hitl-bridge serve` as its own process on `store_url`, up and answering; yields its
    base URL and its log file (read it after the block: the process has ended)."""
    port = free_port()
    config = (f"store: {{url: '{store_url}'}}\nhttp: {{listen: '127.0.0.1:{port}'}}\n"
              f"sources: [{{type: webhook}}]\nlog_level: {log_level}\n")
    async with serve_process(Path(tmp), port, config, "bench"):
        yield f"http://127.0.0.1:{port}", Path(tmp) / "bench.log"


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a daemon the bench started: SIGTERM, and SIGKILL if it has not ended in 30 s."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--latency", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        async with daemon_process(f"sqlite:///{tmp}/bridge.db", tmp) as (base, log):
            rate, e5, other = await intake(base, args.requests, args.concurrency)
            samples = await latency(base, args.latency)
        locked = log.read_text().count("database is locked")
    print(f"intake: {args.requests} requests, {args.concurrency} concurrent clients: {rate:,.0f} requests/s, "
          f"{e5} 5xx, {other} other non-201, {locked} 'database is locked'   (target ≥ 1,000/s, 0, 0)")
    print(f"answer→callback latency over {len(samples)} requests: p50 {pct(samples, 0.5):.1f} ms, "
          f"p99 {pct(samples, 0.99):.1f} ms, max {max(samples):.1f} ms, mean {statistics.mean(samples):.1f} ms"
          "   (target p50 ≤ 10 ms, p99 ≤ 30 ms)")


if __name__ == "__main__":
    asyncio.run(main())
