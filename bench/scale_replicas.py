"""Scale benchmark, replicas: PostgreSQL intake with 1, 2 and 3 daemons on one schema.

The 16 keep-alive connections of `scale_intake.load` are spread over the replicas; each run
prints requests/s and the daemons' whole CPU per create (all replicas' CPU / creates): the
figure to extrapolate from on bigger machines.

Usage: .venv/bin/python bench/scale_replicas.py [--quick]
PostgreSQL: HITL_BENCH_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test), a
fresh schema per run, dropped after; skipped (with a figure saying why) when unreachable.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import pct
from bench_store import PG_URL, pg_schema, with_schema
from scale_intake import cpu_seconds, daemons, load
from scale_lib import Figure, table

AREA = "replicas"


async def postgres_figures(total: int, warmup: int) -> list[Figure]:
    rates: list[float] = []
    figures = []
    for replicas in (1, 2, 3):
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
        rates.append(run.rate)
        growth = "" if replicas == 1 else f", ×{run.rate / rates[0]:.2f} of 1"
        figures.append(Figure(
            AREA, f"PostgreSQL intake, {replicas} replica{'s' if replicas > 1 else ''} ({run.failed} failed)",
            f"{run.rate:,.0f}/s{growth} (p99 {pct(run.latencies_ms, 0.99):.0f} ms, "
            f"{cpu / run.count * 1000:.2f} ms daemon CPU each)", "grows with replicas"))
    return figures


async def postgres_reachable() -> str | None:
    import asyncpg

    try:
        conn = await asyncpg.connect(PG_URL, timeout=5)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    await conn.close()
    return None


async def measure(quick: bool) -> list[Figure]:
    total, warmup = (2000, 500) if quick else (8000, 2000)
    why_not = await postgres_reachable()
    if why_not is not None:
        return [Figure(AREA, "PostgreSQL intake, 1/2/3 replicas", f"skipped: {why_not}", "grows with replicas")]
    return await postgres_figures(total, warmup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer requests per run")
    args = parser.parse_args()
    print(table(asyncio.run(measure(args.quick))))


if __name__ == "__main__":
    main()
