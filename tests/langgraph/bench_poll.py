"""Benchmark (not a test): what one poll of the langgraph source costs with N waiting threads.

    .venv/bin/python -m tests.langgraph.bench_poll [N]      # default 1000

Starts a real `langgraph dev` on 127.0.0.1, pauses N threads in `interrupt()`, then runs the
source's poll twice against it: the first poll (every thread is new: details fetched,
N requests submitted) and a steady-state poll (nothing changed: ids and timestamps only).
Prints HTTP calls, bytes received and wall time for each. The sink is a counter, so the
figures are the source's and LangGraph's cost alone.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from adapters.langgraph.client import LangGraphClient
from adapters.langgraph.source import LangGraphConfig, LangGraphSource
from bridge.models import Request, RequestIn
from tests.langgraph.conftest import LangGraphServer


class CountingSink:
    def __init__(self) -> None:
        self.submitted = 0
        self.withdrawn = 0

    async def submit(self, request: RequestIn, *, source: str, source_ref: dict[str, Any] | None = None,
                     format: str = "native") -> tuple[Request, bool]:
        self.submitted += 1
        return None, True  # type: ignore[return-value]

    async def withdraw(self, source: str, external_id: str, reason: str) -> Request | None:
        self.withdrawn += 1
        return None


class Meter(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.calls = 0
        self.bytes_in = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        self.calls += 1
        self.bytes_in += len(body)
        return httpx.Response(response.status_code, headers=response.headers, content=body)


async def pause_threads(url: str, count: int, tag: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        gate = asyncio.Semaphore(20)

        async def one(i: int) -> None:
            async with gate:
                thread = (await http.post("/threads", json={"metadata": {"bench": tag}})).json()
                await http.post(f"/threads/{thread['thread_id']}/runs",
                                json={"assistant_id": "inbox", "input": {}})

        await asyncio.gather(*(one(i) for i in range(count)))
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            reply = await http.post("/threads/count", json={"status": "interrupted", "metadata": {"bench": tag}})
            if reply.json() >= count:
                return
            await asyncio.sleep(0.5)
        raise RuntimeError("threads did not all pause in time")


async def main(count: int) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        server = LangGraphServer(Path(workdir))
        server.start()
        try:
            started = time.monotonic()
            await pause_threads(server.url, count, "b1")
            print(f"paused {count} threads in {time.monotonic() - started:.1f} s")
            meter = Meter()
            config = LangGraphConfig(base_url=server.url, metadata={"bench": "b1"}, page_size=100)
            client = LangGraphClient(server.url, transport=meter, timeout_s=60)
            source = LangGraphSource(config, client=client)
            sink = CountingSink()
            for label in ("first poll (all new)", "steady poll (no change)", "steady poll (no change)"):
                meter.calls = meter.bytes_in = 0
                started = time.monotonic()
                await source.scan(sink)  # type: ignore[arg-type]
                took = time.monotonic() - started
                print(f"{label:26s} {meter.calls:4d} HTTP calls  {meter.bytes_in / 1024:8.1f} KiB in  "
                      f"{took * 1000:8.1f} ms   (submitted so far: {sink.submitted})")
            await source.close()
        finally:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
