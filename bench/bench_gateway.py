"""Gateway benchmark: what the MCP gateway adds to an allowed `tools/call`.

Runs a downstream MCP server (bench/gateway_echo.py: the SDK's server, one `echo` tool,
Streamable HTTP) and `hitl-bridge serve` (fresh SQLite store) with a gateway in front of it
at `/mcp/bench` and a rule allowing reads (`policies:`, so no person is asked: the call is
decided by the core's verdict step, recorded, and forwarded). Then, for each count of
concurrent agent sessions (each its own MCP sessions, the real `mcp` client), `--calls`
calls with distinct arguments are made on each path, straight to the server and through
the gateway in turn (call n direct, call n through the gateway, …), so load from other
work falls on both paths alike.

Prints, next to the targets: p50 / p99 per path, what the gateway adds (gateway minus
direct at the same percentile), and CPU per call read from /proc: the daemon's per call
through the gateway, and the echo server's per direct call (what one MCP hop of the SDK's
server costs, for comparison). CPU figures hold on a busy machine; latencies do not.
`--profile FILE` records the daemon with py-spy (raw format) during the 1-session run.

Usage: .venv/bin/python bench/bench_gateway.py [--calls 2000] [--sessions 1,8,32] [--profile out.raw]
Target: the gateway adds ≤ 1 ms at p50 and ≤ 5 ms at p99.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import httpx2
from bench_core import free_port, pct, serve_process  # bench/ is on the path: run as a script
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from scale_lib import Figure, table

TOKEN = "bench-token-0123456789abcdef"
TARGET_P50_MS, TARGET_P99_MS = 1.0, 5.0


@contextlib.asynccontextmanager
async def echo_server(tmp: Path) -> AsyncIterator[tuple[str, int]]:
    """The downstream server: its MCP URL and its pid."""
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
            yield f"http://127.0.0.1:{port}/mcp", proc.pid
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


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Target:
    """One path to the echo tool: straight to the server, or through the gateway."""

    url: str
    headers: dict[str, str]
    pid: int
    serves: int = 1  # calls the process at `pid` answers per call on this path
    took: list[float] = field(default_factory=list)  # ms per call
    cpu_ms: float = 0.0  # the process at `pid`, per call it answers


async def session_calls(targets: list[Target], first: int, count: int, ready: asyncio.Barrier) -> None:
    """One agent session per target; each call is made on every path in turn, so a burst
    of load from elsewhere falls on both alike."""
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for target in targets:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=target.headers, timeout=httpx2.Timeout(30, read=60)))
            client = await stack.enter_async_context(
                Client(streamable_http_client(target.url, http_client=http), mode="legacy"))
            await client.list_tools()
            clients.append(client)
        await ready.wait()  # sessions open first: the CPU read covers calls, not handshakes
        for n in range(first, first + count):
            for target, client in zip(targets, clients, strict=True):
                start = time.perf_counter()
                result = await client.call_tool("echo", {"text": f"call {n}"})
                target.took.append((time.perf_counter() - start) * 1000)
                if result.is_error:
                    raise SystemExit(f"call {n} failed: {result.content}")


async def run(targets: list[Target], calls: int, sessions: int) -> None:
    """`calls` calls on each target over `sessions` sessions; fills in each one's figures."""
    for target in targets:
        target.took = []
    each = calls // sessions
    ready = asyncio.Barrier(sessions + 1)
    running: list[Awaitable[None]] = [session_calls(targets, s * each, each, ready) for s in range(sessions)]
    calling = asyncio.gather(*running)
    await ready.wait()
    before = [cpu_s(t.pid) for t in targets]
    await calling
    for target, cpu0 in zip(targets, before, strict=True):
        target.cpu_ms = (cpu_s(target.pid) - cpu0) * 1000 / (len(target.took) * target.serves)


@contextlib.contextmanager
def profiled(pid: int, out: str | None) -> Iterator[None]:
    """py-spy on `pid` (raw format, to `out`) for the block, when asked."""
    if not out:
        yield
        return
    spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(pid), "--format",
                            "raw", "-o", out, "-r", "250", "--nonblocking"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(1)  # py-spy attaches
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(30)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--sessions", default="1,8,32")
    parser.add_argument("--profile", help="write a py-spy raw profile of the daemon (1-session run) here")
    args = parser.parse_args()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        port = free_port()
        async with echo_server(tmp) as (downstream, echo_pid), \
                serve_process(tmp, port, config(port, downstream)) as daemon:
            direct = Target(downstream, {}, echo_pid, serves=2)  # the echo server answers the gateway too
            gateway = Target(f"http://127.0.0.1:{port}/mcp/bench", {"Authorization": f"Bearer {TOKEN}"}, daemon.pid)
            print(f"{args.calls} allowed calls (distinct arguments) per path and run, the paths in turn; "
                  "allowed by a rule (policies:)")
            for sessions in (int(s) for s in args.sessions.split(",")):
                await run([direct, gateway], min(200, args.calls), sessions)  # warm both paths
                with profiled(daemon.pid, args.profile if sessions == 1 else None):
                    await run([direct, gateway], args.calls, sessions)
                d50, d99 = pct(direct.took, 0.5), pct(direct.took, 0.99)
                g50, g99 = pct(gateway.took, 0.5), pct(gateway.took, 0.99)
                at = f"{sessions} session{'s' if sessions > 1 else ''}"
                figures += [
                    Figure("gateway", f"direct p50 / p99, {at}", f"{d50:.2f} / {d99:.2f} ms", "-"),
                    Figure("gateway", f"through the gateway p50 / p99, {at}", f"{g50:.2f} / {g99:.2f} ms", "-"),
                    Figure("gateway", f"added p50, {at}", f"{g50 - d50:.2f} ms", f"≤ {TARGET_P50_MS:.0f} ms",
                           g50 - d50 <= TARGET_P50_MS),
                    Figure("gateway", f"added p99, {at}", f"{g99 - d99:.2f} ms", f"≤ {TARGET_P99_MS:.0f} ms",
                           g99 - d99 <= TARGET_P99_MS),
                    Figure("gateway", f"daemon CPU per gateway call, {at}", f"{gateway.cpu_ms:.2f} ms", "-"),
                    Figure("gateway", f"echo server CPU per call (one SDK hop), {at}", f"{direct.cpu_ms:.2f} ms",
                           "-"),
                ]
                print(table(figures[-6:]), flush=True)
    print()
    print(table(figures))


if __name__ == "__main__":
    asyncio.run(main())
