"""Bench: what polling a thousand waiting Mastra runs costs (prints figures; not a test).

Run: .venv/bin/python bench/engines_poll.py [N]
A real daemon (SQLite in a temp dir) polls the real Mastra test server (tests/engines/
mastra_app, built on first use) holding N suspended runs. Printed: time until all N are
requests, then per steady-state poll the HTTP requests sent and the wall time of one poll
(source side).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.mastra.source import MastraSource
from tests.engines.mastra_engine import MastraEngine
from tests.engines.mastra_server import MastraServer, prepare
from tests.harness import running_bridge, wait_for


async def main(n: int = 1000) -> None:
    entry, _ = prepare()
    with tempfile.TemporaryDirectory() as tmp:
        server = MastraServer(entry, Path(tmp) / "mastra.log")
        server.start()
        engine = MastraEngine(server.url)
        await engine.server.start()
        try:
            await bench(engine, n, Path(tmp))
        finally:
            await engine.close()
            server.stop()


async def bench(engine: MastraEngine, n: int, tmp: Path) -> None:
    for _ in range(n):
        await engine.start("freeform")
    config = {"sources": [{"type": "mastra", "base_url": engine.url, "workflows": ["freeform"],
                           "poll_every": "1h", "page_size": 100}]}
    start = time.perf_counter()
    async with running_bridge(tmp, config) as bridge:

        async def all_in() -> bool:
            return len(await bridge.store.list_requests(source="mastra", limit=n + 10)) == n

        await wait_for(all_in, timeout=300)
        ingest = time.perf_counter() - start
        source = bridge.sources[0]
        assert isinstance(source, MastraSource)
        timings, calls = [], []
        for _ in range(20):
            before = len(engine.server.calls)
            t0 = time.perf_counter()
            await source.poll_once(bridge.service)
            timings.append((time.perf_counter() - t0) * 1000)
            calls.append(len(engine.server.calls) - before)
    print(f"mastra: {n} suspended runs (real Mastra server, through the test proxy)")
    print(f"  first sight → {n} stored requests: {ingest:.2f} s")
    print(
        f"  steady-state poll: {statistics.mean(calls):.0f} HTTP requests, "
        f"median {statistics.median(timings):.1f} ms, max {max(timings):.1f} ms"
    )
    print("  target: a thousand waiting runs cost little (paged: ≤ 10 requests a poll, no store writes)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
