"""Gateway benchmark: what the MCP gateway adds to an allowed `tools/call`.

Runs a downstream MCP server (bench/gateway_echo.py: the SDK's server, one `echo` tool,
Streamable HTTP) and `hitl-bridge serve` (fresh SQLite store) with a gateway in front of it
at `/mcp/bench` and a rule allowing reads (`policies:`, so no person is asked: the call is
decided by the core's verdict step and forwarded). Then, for 1, 8 and 32 concurrent agent
sessions (each its own MCP session, the real `mcp` client), `--calls` calls with distinct
arguments are made straight to the server, then through the gateway. Prints p50 / p99 per
path and what the gateway adds (gateway minus direct at the same percentile).

Usage: .venv/bin/python bench/bench_gateway.py [--calls 2000] [--sessions 1,8,32]
Target: the gateway adds ≤ 1 ms at p50 and ≤ 5 ms at p99.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import httpx2
from bench_core import free_port, pct, serve_process  # bench/ is on the path: run as a script
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TOKEN = "bench-token-0123456789abcdef"
TARGET_P50_MS, TARGET_P99_MS = 1.0, 5.0


@contextlib.asynccontextmanager
async def echo_server(tmp: Path) -> AsyncIterator[str]:
    port = free_port()
    with (tmp / "echo.log").open("w") as out:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).parent / "gateway_echo.py"), str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
        try:
            async with httpx.AsyncClient() as http:
                for _ in range(300):
                    with contextlib.suppress(httpx.HTTPError):
                        await http.get(f"http://127.0.0.1:{port}/mcp")
                        break
                    await asyncio.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            proc.wait(10)


def config(port: int, downstream: str) -> str:
    return f"""
store: {{url: "sqlite:///bridge.db"}}
http: {{listen: "127.0.0.1:{port}", api_tokens: {{bench: "{TOKEN}"}}}}
sources:
  - type: webhook
  - type: gateway
    name: bench
    servers:
      - {{name: echo, url: "{downstream}"}}
policies:
  - {{name: reads, source: bench, annotations: {{readOnlyHint: true}}, effect: allow}}
"""


async def session_calls(url: str, headers: dict[str, str], first: int, count: int, took: list[float]) -> None:
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http, \
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        await client.list_tools()
        for n in range(first, first + count):
            start = time.perf_counter()
            result = await client.call_tool("echo", {"text": f"call {n}"})
            took.append((time.perf_counter() - start) * 1000)
            if result.is_error:
                raise SystemExit(f"call {n} failed: {result.content}")


async def run(url: str, headers: dict[str, str], calls: int, sessions: int) -> list[float]:
    took: list[float] = []
    each = calls // sessions
    await asyncio.gather(*(session_calls(url, headers, s * each, each, took) for s in range(sessions)))
    return took


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--sessions", default="1,8,32")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        port = free_port()
        async with echo_server(tmp) as downstream, serve_process(tmp, port, config(port, downstream)):
            gateway = f"http://127.0.0.1:{port}/mcp/bench"
            auth = {"Authorization": f"Bearer {TOKEN}"}
            print(f"{args.calls} allowed calls (distinct arguments) per run; allowed by a rule (policies:)")
            print(f"{'sessions':>8} {'direct p50':>11} {'p99':>8} {'gateway p50':>12} {'p99':>8} "
                  f"{'added p50':>10} {'p99':>8}")
            for sessions in (int(s) for s in args.sessions.split(",")):
                await run(downstream, {}, min(200, args.calls), sessions)  # warm both paths
                await run(gateway, auth, min(200, args.calls), sessions)
                direct = await run(downstream, {}, args.calls, sessions)
                through = await run(gateway, auth, args.calls, sessions)
                d50, d99, g50, g99 = pct(direct, 0.5), pct(direct, 0.99), pct(through, 0.5), pct(through, 0.99)
                print(f"{sessions:>8} {d50:>9.2f}ms {d99:>6.2f}ms {g50:>10.2f}ms {g99:>6.2f}ms "
                      f"{g50 - d50:>8.2f}ms {g99 - d99:>6.2f}ms")
            print(f"target: added ≤ {TARGET_P50_MS:.0f} ms p50, ≤ {TARGET_P99_MS:.0f} ms p99")


if __name__ == "__main__":
    asyncio.run(main())
