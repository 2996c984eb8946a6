"""Answers benchmark (issue 34): what an answered request costs the daemon, and how fast its
callback arrives.

Runs `hitl-bridge serve` as its own process exactly as the peer comparison does
(bench/peer_servers.bridge: SQLite, a webhook source, API tokens, WARNING logs), with a local
callback receiver (bench/peer_workloads.receiving), and measures, from /proc (the whole
process, all threads; split into the event loop's main thread and the others):

  - idle: the daemon's CPU while nothing happens (timers, pollers), % of a core
  - creates: N requests with a signed callback, one at a time: CPU per create
  - answers, one at a time: answer, wait for its callback, next: CPU per answered request
    (the answer, its receipt, its callback and the delivery's bookkeeping), and answer sent →
    callback received p50 / p99
  - a burst of 100 answers sent at once: CPU per answer, until the last callback arrives
  - the whole life at 10 answers/s (the peer comparison's open loop: create, answer one
    every 100 ms, callback): CPU per request, idle time included

CPU per answered request is the figure that holds on a busy machine; latencies move with the load.
The issue sets no target for it (its CPU target is the peer comparison's, per 1,000 requests):
it is printed to compare runs; answer → callback keeps issue 2's p99 ≤ 30 ms.

Usage: .venv/bin/python bench/bench_answers.py [--quick] [--profile answers.txt]
(--profile: py-spy records the daemon during the one-at-a-time and burst phases; .txt gives
collapsed stacks, .svg a flame graph.)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import pct
from peer_servers import Peer, bridge
from peer_workloads import OPEN_TIMEOUT_S, Receiver, answer, create, open_loop, receiving, session
from scale_intake import cpu_seconds, profiling
from scale_lib import Figure, table

AREA = "answers"
BURST = 100
IDLE_S = 5.0
TARGET_P99_MS = 30.0  # answer sent → callback received (issue 2)


class Meter:
    """The daemon's CPU (whole process and main thread) between two readings."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.start = (cpu_seconds(pid), cpu_seconds(pid, pid))

    def per(self, count: int) -> tuple[float, float]:
        """(whole, main thread) ms of CPU per item since the meter started."""
        whole, main = cpu_seconds(self.pid) - self.start[0], cpu_seconds(self.pid, self.pid) - self.start[1]
        return whole / count * 1000, main / count * 1000


def cpu_figure(name: str, whole_main: tuple[float, float], target: float | None) -> Figure:
    whole, main = whole_main
    return Figure(AREA, f"{name} (main thread / others)",
                  f"{whole:.2f} ms ({main:.2f} / {whole - main:.2f})",
                  "-" if target is None else f"≤ {target:.2f} ms", None if target is None else whole <= target)


async def one_at_a_time(peer: Peer, receiver: Receiver, ids: list[str]) -> tuple[list[float], tuple[float, float]]:
    """Answer `ids` one after the other, each once the last one's callback came: latencies, CPU."""
    latencies = []
    async with session(peer) as client:
        meter = Meter(peer.pid)
        for rid in ids:
            sent = await answer(client, peer, rid)
            arrived = await receiver.wait_for([rid], within_s=30)
            latencies.append((arrived[rid] - sent) * 1000)
        return latencies, meter.per(len(ids))


async def burst(peer: Peer, receiver: Receiver, ids: list[str]) -> tuple[float, tuple[float, float]]:
    """`ids` answered at once: ms from the first sent to the last callback, and CPU per answer."""
    async with session(peer) as client:
        meter = Meter(peer.pid)
        start = time.monotonic()
        await asyncio.gather(*(answer(client, peer, rid) for rid in ids))
        arrived = await receiver.wait_for(ids, within_s=120)
        return (max(arrived.values()) - start) * 1000, meter.per(len(ids))


async def creates(peer: Peer, receiver: Receiver, count: int, tag: str) -> tuple[list[str], tuple[float, float]]:
    async with session(peer) as client:
        meter = Meter(peer.pid)
        ids = [await create(client, peer, f"{tag}-{i}", OPEN_TIMEOUT_S, receiver.url) for i in range(count)]
        return ids, meter.per(count)


async def measure(quick: bool, profile: str | None = None) -> list[Figure]:
    count, lifecycle = (200, 50) if quick else (1000, 200)
    with tempfile.TemporaryDirectory() as tmp:
        async with receiving() as receiver, bridge(Path(tmp)) as peer:
            warm, _ = await creates(peer, receiver, 50, "warm")  # first calls: imports, the receipt key
            await one_at_a_time(peer, receiver, warm)
            await asyncio.sleep(1.0)  # the warm-up's background work (channel updates) settles
            idle = Meter(peer.pid)
            await asyncio.sleep(IDLE_S)
            idle_whole, idle_main = idle.per(1)
            ids, create_cpu = await creates(peer, receiver, count + BURST, "run")
            with profiling(peer.pid, profile):
                latencies, answer_cpu = await one_at_a_time(peer, receiver, ids[:count])
                burst_ms, burst_cpu = await burst(peer, receiver, ids[count:])
            async with session(peer) as client:
                meter = Meter(peer.pid)
                life = [await create(client, peer, f"life-{i}", OPEN_TIMEOUT_S, receiver.url)
                        for i in range(lifecycle)]
                await open_loop(client, peer, life)
                await receiver.wait_for(life, within_s=120)
                life_cpu = meter.per(lifecycle)
    p99 = pct(latencies, 0.99)
    return [
        Figure(AREA, f"idle daemon, {IDLE_S:.0f} s (main thread / others)",
               f"{idle_whole / IDLE_S / 10:.2f} % of a core ({idle_main / IDLE_S / 10:.2f} / "
               f"{(idle_whole - idle_main) / IDLE_S / 10:.2f})", "-"),
        cpu_figure(f"daemon CPU per create with a callback, {count + BURST:,} one at a time", create_cpu, None),
        cpu_figure(f"daemon CPU per answered request (answer, receipt, callback), {count:,} one at a time",
                   answer_cpu, None),
        Figure(AREA, "answer sent → callback received p50 / p99", f"{pct(latencies, 0.5):.1f} / {p99:.1f} ms",
               f"p99 ≤ {TARGET_P99_MS:.0f} ms", p99 <= TARGET_P99_MS),
        cpu_figure(f"daemon CPU per answer in a burst of {BURST}", burst_cpu, None),
        Figure(AREA, f"burst of {BURST} answers: first sent → last callback", f"{burst_ms:.0f} ms", "-"),
        cpu_figure(f"daemon CPU per request's whole life, {lifecycle} answered at 10/s (idle time included)",
                   life_cpu, None),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer requests")
    parser.add_argument("--profile", help="py-spy output for the daemon's answers (.txt collapsed stacks, "
                                          ".svg flame graph, .json speedscope)")
    args = parser.parse_args()
    print(table(asyncio.run(measure(args.quick, args.profile))))


if __name__ == "__main__":
    main()
