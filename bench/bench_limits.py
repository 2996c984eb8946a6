"""Issue 34, performance toward the machine's limit: every figure in one run, each next to its target.

Parts (each also runs alone):
  peers     the bridge beside awaithumans (its own venv), interleaved rounds: intake, answer →
            callback, a burst of answers, deadline lateness, RSS, CPU per 1,000 requests
            (bench/peer_compare.py; it also writes the table and charts the docs show)
  waiting   many waits on one connection: KiB per waiting request at 10,000, idle CPU,
            wake-up p99 (bench/scale_waiting.py)
  intake    SQLite creates/s with 16 clients, p99, the daemon's whole CPU per create, and a
            kill -9 during batched intake that must lose no acknowledged create
            (bench/scale_intake.py)
  replicas  PostgreSQL with 1, 2 and 3 replicas: requests/s and CPU per create
            (bench/scale_replicas.py)
  answers   what an answered request costs (answer, receipt, signed callback), one at a time
            and in a burst of 100; answer → callback (bench/bench_answers.py)
  answers   the daemon's whole CPU per answered request (answer, receipt, signed callback), one at a
            time and in a burst of 100, answer → callback p50/p99 (bench/bench_answers.py)

Usage: .venv/bin/python bench/bench_limits.py [--quick] [--only peers,waiting,intake,replicas,answers]
Exit status 1 when a figure misses its target. CPU per create is the figure that holds on a
noisy machine: requests/s and latencies move with whatever else runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_lib import run_parts

PARTS = {"peers": "peer_compare", "waiting": "scale_waiting", "intake": "scale_intake", "replicas": "scale_replicas",
         "answers": "bench_answers"}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a first look")
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts to run")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; machine load {os.getloadavg()[0]:.2f} at start (the machine may be shared)")
    return await run_parts(parser, PARTS, args.quick, args.only)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
