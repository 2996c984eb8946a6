"""Scale benchmark, replicas: PostgreSQL intake with 1, 2 and 3 daemons on one schema.

The 16 keep-alive connections of `scale_intake.load` are spread over the replicas; each
configuration prints requests/s and the daemons' whole CPU per create (every replica's CPU,
from /proc, / creates): the figure to extrapolate from on bigger machines. Every replica
hears every change (PostgreSQL LISTEN/NOTIFY, `bridge.store.pg_follow`), so what that costs
shows as the growth of CPU per create with replicas: "3 replicas ÷ 1 replica", target
≤ 1.2×. A fourth configuration, 3 replicas with every create sent to the first, separates
what a replica that only hears of a create spends on it from what the replica that took it
in spends: the ratio on cores of their own. Measured in turns (1, 2, 3, 3 on the first),
3 runs (2 with --quick), so a busy machine disturbs them alike; each figure gives the
median and the spread of the runs, and a ratio is taken within each run.

On a small machine the replicas, the PostgreSQL server and the load generator share the
cores: requests/s then says little (replicas need cores of their own), and CPU per create
grows with replicas for reasons of its own: busy daemons preempt each other (caches,
context switches), and a daemon taking a third of the requests does less per wake-up of
its event loop than one taking all of them flat out. (At a fixed 150 creates/s, 50 on each
of 3 replicas cost about 1.7× the CPU per create of 150 on one: nearly all of it wake-ups,
not the replicas hearing of each other's creates.)

Usage: .venv/bin/python bench/scale_replicas.py [--quick] [--runs N]
PostgreSQL: HITL_BENCH_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test), a
fresh schema per configuration and run, dropped after; skipped (with a figure saying why)
when unreachable.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import pct
from bench_store import PG_URL, pg_schema, with_schema
from scale_intake import cpu_seconds, daemons, load
from scale_lib import Figure, table

AREA = "replicas"
REPLICAS = (1, 2, 3)
TARGET_RATIO = 1.2  # CPU per create with 3 replicas ÷ with 1 (issue 34)


@dataclass(frozen=True)
class Run:
    """One configuration measured once."""

    replicas: int
    rate: float  # creates/s
    cpu_ms: tuple[float, ...]  # each replica's CPU per create, ms
    p99_ms: float
    failed: int

    @property
    def total_ms(self) -> float:
        """Every replica's CPU per create."""
        return sum(self.cpu_ms)


async def measure_one(replicas: int, total: int, warmup: int, *, first_only: bool = False) -> Run:
    """`replicas` daemons on a fresh schema; the creates go to all of them (or to the first
    only: the others just hear of them)."""
    schema = f"hitl_bench_{secrets.token_hex(4)}"
    await pg_schema(True, schema)
    try:
        async with daemons(with_schema(schema), replicas) as started:
            ports = [port for port, _pid in started]
            ports = ports[:1] if first_only else ports
            await load(ports, warmup, "warm")
            cpu0 = [cpu_seconds(pid) for _port, pid in started]
            run = await load(ports, total, "run")
            cpu = [cpu_seconds(pid) - c for (_port, pid), c in zip(started, cpu0, strict=True)]
    finally:
        await pg_schema(False, schema)
    return Run(replicas, run.rate, tuple(c / run.count * 1000 for c in cpu), pct(run.latencies_ms, 0.99), run.failed)


def spread(values: list[float], fmt: str) -> str:
    """`median (min–max)` of the runs, or the one value."""
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"


@dataclass(frozen=True)
class Round:
    """One turn over every configuration."""

    spread: dict[int, Run]  # the creates spread over the replicas, by replica count
    first_only: Run  # 3 replicas, every create sent to the first


def figures_of(rounds: list[Round]) -> list[Figure]:
    out = []
    n = f"{len(rounds)} run{'s' if len(rounds) > 1 else ''}"
    for replicas in REPLICAS:
        mine = [r.spread[replicas] for r in rounds]
        failed = sum(r.failed for r in mine)
        out.append(Figure(
            AREA, f"PostgreSQL intake, {replicas} replica{'s' if replicas > 1 else ''} ({failed} failed)",
            f"{spread([r.rate for r in mine], ',.0f')}/s, {spread([r.total_ms for r in mine], '.2f')} ms daemon "
            f"CPU per create, p99 {spread([r.p99_ms for r in mine], '.0f')} ms", "-"))
    ratios = [r.spread[3].total_ms / r.spread[1].total_ms for r in rounds]
    out.append(Figure(AREA, f"CPU per create, 3 replicas ÷ 1 replica ({n}; here 3 busy daemons share 2 cores)",
                      f"×{spread(ratios, '.2f')}", f"≤ ×{TARGET_RATIO}", statistics.median(ratios) <= TARGET_RATIO))
    # what a replica spends on the creates another one took in (it hears of each): with
    # cores of their own, N replicas cost (taker + (N - 1) × follower) per create
    takers = [r.first_only.cpu_ms[0] for r in rounds]
    followers = [statistics.mean(r.first_only.cpu_ms[1:]) for r in rounds]
    out.append(Figure(AREA, "CPU per create, on the replica that took it in (1 of 3 replicas takes all)",
                      f"{spread(takers, '.3f')} ms", "-"))
    out.append(Figure(AREA, "CPU per create, on each replica that only heard of it (its idle CPU included)",
                      f"{spread(followers, '.3f')} ms", "-"))
    extrapolated = [(t + 2 * f) / t for t, f in zip(takers, followers, strict=True)]
    out.append(Figure(AREA, "CPU per create, 3 replicas ÷ 1 on cores of their own: (taker + 2 × follower) ÷ taker",
                      f"×{spread(extrapolated, '.2f')}", f"≤ ×{TARGET_RATIO}",
                      statistics.median(extrapolated) <= TARGET_RATIO))
    return out


async def postgres_figures(total: int, warmup: int, rounds: int) -> list[Figure]:
    measured = []
    for _ in range(rounds):  # in turns: a busy spell of the machine disturbs every configuration alike
        spread_runs = {replicas: await measure_one(replicas, total, warmup) for replicas in REPLICAS}
        measured.append(Round(spread_runs, await measure_one(3, total, warmup, first_only=True)))
    return figures_of(measured)


async def postgres_reachable() -> str | None:
    import asyncpg

    try:
        conn = await asyncpg.connect(PG_URL, timeout=5)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    await conn.close()
    return None


async def measure(quick: bool, rounds: int | None = None) -> list[Figure]:
    total, warmup = (3000, 300) if quick else (8000, 1000)
    why_not = await postgres_reachable()
    if why_not is not None:
        return [Figure(AREA, "PostgreSQL intake, 1/2/3 replicas", f"skipped: {why_not}", f"≤ ×{TARGET_RATIO}")]
    return await postgres_figures(total, warmup, rounds or (2 if quick else 3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer requests per run, 2 runs")
    parser.add_argument("--runs", type=int, help="runs of every configuration (default 3, 2 with --quick)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; machine load {os.getloadavg()[0]:.2f} at start (the machine may be shared)")
    print(table(asyncio.run(measure(args.quick, args.runs))))


if __name__ == "__main__":
    main()
