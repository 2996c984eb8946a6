"""MCP benchmark: what the MCP hop adds between a person's answer and the agent's tool result.

Runs `hitl-bridge serve` as its own process on 127.0.0.1 (fresh SQLite store, `/mcp` mounted),
then for each path asks N approvals one after another; each time a waiting call is parked,
the answer is POSTed and the time from that POST to the waiting side's return is taken:
  - client:  hitl-bridge-client's long poll (`AsyncClient.wait`) — the baseline
  - stdio:   `hitl-bridge mcp` (its own process) → request_approval's tool result
  - /mcp:    Streamable HTTP to the daemon → request_approval's tool result
It prints p50 / p99 per path and the MCP hop's overhead (path minus baseline).

Usage: .venv/bin/python bench/bench_mcp.py [--count 300]
Target: the MCP hop adds ≤ 10 ms at p50 on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
from bench_core import free_port, pct, serve_process  # bench/ is on the path: run as a script
from hitl_bridge_client import AsyncClient, request_body
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

TOKEN = "bench-token-0123456789abcdef"
PARKED_S = 0.02  # after the request is posted: let the waiting side's long poll reach the daemon
ARGS = {"tool_name": "deploy", "arguments": {"service": "api", "version": "2.3"}}


@contextlib.asynccontextmanager
async def daemon(tmp: str) -> AsyncIterator[str]:
    port = free_port()
    config = (f"store: {{url: 'sqlite:///{tmp}/bridge.db'}}\nhttp: {{listen: '127.0.0.1:{port}', "
              f"api_tokens: {{bench: '{TOKEN}'}}}}\nsources: [{{type: webhook}}, {{type: mcp}}]\nlog_level: WARNING\n")
    async with serve_process(Path(tmp), port, config):
        yield f"http://127.0.0.1:{port}"


async def measure(base: str, count: int, start: Callable[[], Awaitable[Any]]) -> list[float]:
    """`count` times: start a waiting call, wait for its request, answer, time answer → return."""
    samples: list[float] = []
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        for _ in range(count):
            waiting = asyncio.ensure_future(start())
            request_id = await posted(http)
            await asyncio.sleep(PARKED_S)
            began = time.perf_counter()
            answered = await http.post(f"/v1/requests/{request_id}/answer", json={"value": "yes"})
            answered.raise_for_status()
            await waiting
            samples.append((time.perf_counter() - began) * 1000)
    return samples


async def posted(http: httpx.AsyncClient) -> str:
    for _ in range(2000):
        found = (await http.get("/v1/requests", params={"state": "posted", "limit": 1})).json()["requests"]
        if found:
            return str(found[0]["id"])
        await asyncio.sleep(0.002)
    raise RuntimeError("the request was never posted")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=300)
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with daemon(tmp) as base:
            async with AsyncClient(base, token=TOKEN) as client:
                async def plain() -> Any:
                    body = request_body("Allow deploy?", [{"id": "approve", "kind": "confirm", "prompt": "Go?"}])
                    return await client.wait(await client.create(body))
                results["client long poll"] = await measure(base, args.count, plain)
            exe = str(Path(sys.executable).parent / "hitl-bridge")
            stdio = StdioServerParameters(command=exe, args=["mcp", "--url", base, "--token", TOKEN], cwd=tmp)
            with (Path(tmp) / "mcp-stderr.log").open("w") as errors:  # its start-up note: not in the figures
                async with Client(stdio_client(stdio, errlog=errors)) as mcp_client:
                    results["stdio (hitl-bridge mcp)"] = await measure(
                        base, args.count, lambda: mcp_client.call_tool("request_approval", ARGS))
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"},
                                          timeout=httpx2.Timeout(30, read=300)) as http2, \
                    Client(streamable_http_client(f"{base}/mcp", http_client=http2)) as mcp_client:
                results["/mcp (Streamable HTTP)"] = await measure(
                    base, args.count, lambda: mcp_client.call_tool("request_approval", ARGS))
    baseline = pct(results["client long poll"], 0.5)
    print(f"answer → result, {args.count} approvals per path, one at a time (cores: {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}):")
    for name, samples in results.items():
        hop = "" if name.startswith("client") else f"   MCP hop adds {pct(samples, 0.5) - baseline:+.1f} ms at p50"
        print(f"  {name:26} p50 {pct(samples, 0.5):6.1f} ms   p99 {pct(samples, 0.99):6.1f} ms{hop}")
    print("target: the MCP hop adds ≤ 10 ms at p50 on loopback")


if __name__ == "__main__":
    asyncio.run(main())
