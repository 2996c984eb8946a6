"""Connection-abuse benchmark: does the daemon keep answering while it is flooded?

Runs `hitl-bridge serve` as its own process on 127.0.0.1 (optionally with a lower open-file
limit), then:
  1. waves of half-sent requests (headers that never end), kept open;
  2. a slowloris crowd trickling one header byte every 100 ms;
and meanwhile asks /healthz every 50 ms → answered share, p50 / p99 / max latency; and at the
end the daemon's descriptors, the seconds until every flood connection was closed by the
daemon, and the size of its log.

Usage: .venv/bin/python bench/bench_floods.py [--half-sent 9000] [--waves 2] [--slowloris 450]
                                              [--fd-limit 0 (inherit)]
Targets (issue 5): every /healthz answered, p99 ≤ 250 ms, no "Too many open files", log < 50 lines.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HALF_SENT = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"


async def probe(base: str, stop: asyncio.Event, latencies: list[float], failures: list[str]) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=5) as client:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                status = (await client.get("/healthz")).status_code
                latencies.append((time.perf_counter() - started) * 1000)
                if status != 200:
                    failures.append(str(status))
            except httpx.HTTPError as exc:
                failures.append(type(exc).__name__)
            await asyncio.sleep(0.05)


async def half_sent(port: int, count: int) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    opened = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(HALF_SENT)
        opened.append((reader, writer))
    return opened


async def slowloris(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for byte in HALF_SENT + b"X-Slow: " + b"a" * 100_000:
            writer.write(bytes([byte]))
            await writer.drain()
            try:
                await asyncio.wait_for(reader.read(100), timeout=0.1)
            except TimeoutError:
                continue  # still listening: one more byte
            return  # the daemon answered 408 or hung up
    except (ConnectionError, OSError):
        return
    finally:
        writer.close()


async def until_closed(conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]) -> None:
    async def one(reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while await reader.read(1000):
                pass
    await asyncio.gather(*(one(r) for r, _ in conns))


async def run(args: argparse.Namespace, port: int, process: subprocess.Popen[bytes]) -> None:
    base = f"http://127.0.0.1:{port}"
    stop, latencies, failures = asyncio.Event(), [], []
    prober = asyncio.create_task(probe(base, stop, latencies, failures))
    started = time.perf_counter()
    flood: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    for wave in range(args.waves):
        flood += await half_sent(port, args.half_sent)
        print(f"wave {wave + 1}: {args.half_sent} half-sent connections open after "
              f"{time.perf_counter() - started:.1f}s; daemon descriptors: {len(os.listdir(f'/proc/{process.pid}/fd'))}")
    await asyncio.gather(*(slowloris(port) for _ in range(args.slowloris)))
    await until_closed(flood)
    print(f"every flood connection closed by the daemon after {time.perf_counter() - started:.1f}s")
    stop.set()
    await prober
    for _, writer in flood:
        writer.close()
    answered = len(latencies)
    ordered = sorted(latencies) or [0.0]
    print(f"/healthz during the flood: {answered} answered, {len(failures)} failed "
          f"({', '.join(sorted(set(failures))) or '-'}); p50 {statistics.median(ordered):.1f} ms, "
          f"p99 {ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]:.1f} ms, max {ordered[-1]:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--half-sent", type=int, default=9000)
    parser.add_argument("--waves", type=int, default=2)
    parser.add_argument("--slowloris", type=int, default=450)
    parser.add_argument("--fd-limit", type=int, default=0)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.half_sent * args.waves + args.slowloris + 100
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, need), hard))
    with tempfile.TemporaryDirectory() as home:
        log = Path(home) / "daemon.log"
        config = Path(home) / "bridge.yaml"
        config.write_text(f"store: {{url: 'sqlite:///{home}/bridge.db'}}\nhttp: {{listen: '127.0.0.1:0'}}\n"
                          "sources: [{type: webhook}]\n")

        def limit() -> None:
            if args.fd_limit:
                resource.setrlimit(resource.RLIMIT_NOFILE, (args.fd_limit, args.fd_limit))

        exe = Path(sys.executable).parent / "hitl-bridge"
        with log.open("wb") as out:
            process = subprocess.Popen([str(exe), "-c", str(config), "serve"], stdout=out,
                                       stderr=subprocess.STDOUT, cwd=home, preexec_fn=limit)
        try:
            deadline = time.monotonic() + 60
            while not (found := re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read_text())):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the daemon did not start:\n{log.read_text()}")
                time.sleep(0.05)
            asyncio.run(run(args, int(found.group(1)), process))
        finally:
            process.terminate()
            process.wait(timeout=30)
        text = log.read_text(errors="replace")
        lines = text.splitlines()
        print(f"daemon log: {len(lines)} lines, {len(text.encode())} bytes; tracebacks: {text.count('Traceback')}; "
              f"'Too many open files': {text.count('Too many open files')}")


if __name__ == "__main__":
    socket.setdefaulttimeout(30)
    main()
