"""Scale benchmark: every figure of the scale issue in one run, each next to its target.

Parts (each also runs alone, `python bench/scale_<part>.py [--quick]`):
  waiting  10,000 idle long polls: daemon CPU, RSS per waiter, wake-up p50/p99; cross-replica
           wake-up on PostgreSQL (bench/scale_waiting.py)
  growth   list, /inbox, /inbox/live and /metrics times at 0 / 100,000 open / + 1,000,000 closed;
           restart time and RSS with 100,000 open; intake with an inbox tab open; pruning
           (bench/scale_growth.py)
  intake   SQLite requests/s with 16 clients, CPU per create; PostgreSQL with 1, 2, 3 replicas
           (bench/scale_intake.py)

Usage: .venv/bin/python bench/bench_scale.py [--quick] [--only waiting,growth,intake]
Needs PostgreSQL on 127.0.0.1:5432 (trust auth) for the replica figures.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from scale_lib import run_parts  # bench/ is on the path: run as a script

PARTS = ("waiting", "growth", "intake")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10x smaller sizes, for a first look")
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts to run")
    args = parser.parse_args()
    return await run_parts(parser, {part: f"scale_{part}" for part in PARTS}, args.quick, args.only)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
