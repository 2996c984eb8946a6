"""Scale benchmark, replicas: PostgreSQL intake with 1, 2 and 3 daemons on one schema.

The 16 keep-alive connections of `scale_intake.load` are spread over the replicas; each
configuration prints requests/s and the daemons' whole CPU per create (every replica's CPU,
from /proc, / creates): the figure to extrapolate from on bigger machines. Every replica
hears every change (PostgreSQL LISTEN/NOTIFY, `bridge.store.pg_follow`), so what that costs
shows as the growth of CPU per create with replicas: "3 replicas ÷ 1 replica", target
≤ 1.2×. The configurations are measured in turns (1, 2, 3, then again), RUNS times, so a
busy machine disturbs them alike; each figure gives the median and the spread of the runs,
and the ratio is taken within each run.

On a small machine the replicas, the PostgreSQL server and the load generator share the
cores: requests/s then says little (replicas need cores of their own), CPU per create holds.

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
    cpu_ms: float  # every replica's CPU per create, ms
    p99_ms: float
    failed: int


async def measure_one(replicas: int, total: int, warmup: int) -> Run:
    schema = f"hitl_bench_{secrets.token_hex(4)}"
    await pg_schema(True, schema)
    try:
        async with daemons(with_schema(schema), replicas) as started:
            ports = [port for port, _pid in started]
            await load(ports, warmup, "warm")
            cpu0 = [cpu_seconds(pid) for _port, pid in started]
            run = await load(ports, total, "run")
            cpu = sum(cpu_seconds(pid) - c for (_port, pid), c in zip(started, cpu0, strict=True))
    finally:
        await pg_schema(False, schema)
    return Run(replicas, run.rate, cpu / run.count * 1000, pct(run.latencies_ms, 0.99), run.failed)


def spread(values: list[float], fmt: str) -> str:
    """`median (min–max)` of the runs, or the one value."""
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def figures_of(runs: list[Run], rounds: int) -> list[Figure]:
    out = []
    for replicas in REPLICAS:
        mine = [r for r in runs if r.replicas == replicas]
        failed = sum(r.failed for r in mine)
        out.append(Figure(
            AREA, f"PostgreSQL intake, {replicas} replica{'s' if replicas > 1 else ''} ({failed} failed)",
            f"{spread([r.rate for r in mine], ',.0f')}/s, {spread([r.cpu_ms for r in mine], '.2f')} ms daemon CPU "
            f"per create, p99 {spread([r.p99_ms for r in mine], '.0f')} ms", "CPU per create: see below"))
    by_round = [runs[i * len(REPLICAS):(i + 1) * len(REPLICAS)] for i in range(rounds)]
    ratios = [next(r.cpu_ms for r in one if r.replicas == 3) / next(r.cpu_ms for r in one if r.replicas == 1)
              for one in by_round]
    out.append(Figure(AREA, f"CPU per create, 3 replicas ÷ 1 replica ({rounds} run{'s' if rounds > 1 else ''})",
                      f"×{spread(ratios, '.2f')}", f"≤ ×{TARGET_RATIO}",
                      statistics.median(ratios) <= TARGET_RATIO))
    return out


async def postgres_figures(total: int, warmup: int, rounds: int) -> list[Figure]:
    runs = []
    for _ in range(rounds):
        for replicas in REPLICAS:
            runs.append(await measure_one(replicas, total, warmup))
    return figures_of(runs, rounds)


async def postgres_reachable() -> str | None:
    import asyncpg

    try:
        conn = await asyncpg.connect(PG_URL, timeout=5)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    await conn.close()
    return None


async def measure(quick: bool, rounds: int | None = None) -> list[Figure]:
    total, warmup = (3000, 500) if quick else (8000, 1000)
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
