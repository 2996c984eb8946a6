"""Peer comparison (issue 34): hitl-bridge beside awaithumans 0.1.12, the same workload on both, in
interleaved rounds, and a table and charts for docs/performance.md.

awaithumans is installed from PyPI into its own venv (bench/.peers/awaithumans-0.1.12, pinned by
bench/peers/awaithumans-0.1.12.txt; never into the project's venv) and run as `awaithumans serve`;
the bridge as `hitl-bridge serve`. Each round starts both fresh (SQLite, API tokens, WARNING logs;
bench/peer_servers.py) and runs every workload (bench/peer_workloads.py) on one then the other,
the order alternating per round, so a busy moment of the machine hits both:

  memory idle · intake (16 keep-alive clients) and memory with those requests open · answer →
  callback · answer → long poll · a burst of 100 answers · deadline lateness (both servers at
  once: the deadlines are 60 s, awaithumans' shortest)

Each figure is the median of the rounds, with the lowest and highest round beside it in the
table. CPU per request (from /proc, all the server's threads) holds on a busy machine; rates and
latencies move with whatever else runs.

Usage: .venv/bin/python bench/peer_compare.py [--quick] [--rounds N] [--out DIR] [--redraw DIR]
  --out: where the table (peers-table.md), the readings (peers.json) and the charts
  (peers-*.png) go; default docs/performance/ (bench/out/peers/ with --quick).
  --redraw DIR: no run; the table and charts again from DIR/peers.json.
Charts need matplotlib: .venv/bin/pip install -c requirements.lock -e '.[bench]'
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import peer_report
import peer_servers
import peer_workloads as w
from peer_servers import Peer
from scale_lib import Figure, table

ROOT = Path(__file__).resolve().parent.parent
DOCS_OUT = ROOT / "docs" / "performance"
QUICK_OUT = ROOT / "bench" / "out" / "peers"
MATPLOTLIB_HINT = "charts need matplotlib: .venv/bin/pip install -c requirements.lock -e '.[bench]'"


def sizes_for(quick: bool) -> dict[str, int]:
    if quick:
        return {"rounds": 1, "intake creates": 1800, "intake warm-up": 200, "callback samples": 30,
                "long-poll samples": 20, "burst": 100, "deadline samples": 30}
    return {"rounds": 3, "intake creates": 9500, "intake warm-up": 500, "callback samples": 100,
            "long-poll samples": 50, "burst": 100, "deadline samples": 100}


async def one_round(n: int, sizes: dict[str, int], receiver: w.Receiver) -> dict[str, dict[str, float]]:
    """Both servers, fresh; every workload on each, bridge first in even rounds, awaithumans first
    in odd ones. Returns {peer name: readings}."""
    with tempfile.TemporaryDirectory() as tmp_bridge, tempfile.TemporaryDirectory() as tmp_peer:
        async with contextlib.AsyncExitStack() as stack:
            bridge, peer = await asyncio.gather(
                stack.enter_async_context(peer_servers.bridge(Path(tmp_bridge))),
                stack.enter_async_context(peer_servers.awaithumans(Path(tmp_peer))))
            order = [bridge, peer] if n % 2 == 0 else [peer, bridge]
            readings: dict[str, dict[str, float]] = {p.name: {} for p in order}
            tag = f"r{n}"
            steps: list[tuple[str, Callable[[Peer], Awaitable[w.Readings]]]] = [
                ("memory idle", w.idle_memory),
                ("intake", lambda p: w.intake(p, sizes["intake creates"], sizes["intake warm-up"])),
                ("answer → callback", lambda p: w.callback_latency(p, receiver, sizes["callback samples"], tag)),
                ("answer → long poll", lambda p: w.wait_latency(p, sizes["long-poll samples"], tag)),
                ("burst", lambda p: w.burst(p, receiver, sizes["burst"], tag)),
            ]
            for what, step in steps:
                for p in order:
                    started = time.monotonic()
                    readings[p.name].update(await step(p))
                    print(f"  round {n + 1}: {what} on {p.name}: {time.monotonic() - started:.1f} s", flush=True)
            print(f"  round {n + 1}: deadlines ({w.DEADLINE_S} s) on both at once", flush=True)
            late = await asyncio.gather(*(w.deadline_lateness(p, receiver, sizes["deadline samples"], tag)
                                          for p in order))
            for p, got in zip(order, late, strict=True):
                readings[p.name].update(got)
                readings[p.name].update(w.log_errors(p))
    return readings


def git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


async def run(rounds: int, sizes: dict[str, int]) -> tuple[peer_report.Rounds, dict[str, Any]]:
    peer_servers.ensure_peer_venv()
    meta: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                            "cores": os.cpu_count(), "load_at_start": round(os.getloadavg()[0], 2),
                            "bridge_commit": git_commit(), "peer": f"awaithumans {peer_servers.PEER_VERSION}"}
    out: peer_report.Rounds = []
    async with w.receiving() as receiver:
        for n in range(rounds):
            out.append(await one_round(n, sizes, receiver))
    meta["load_at_end"] = round(os.getloadavg()[0], 2)
    return out, meta


def write_outputs(out: Path, rounds: peer_report.Rounds, sizes: dict[str, int], meta: dict[str, Any]) -> None:
    summary = peer_report.summarize(rounds)
    peer_report.write_results(out, rounds, sizes, meta)
    machine = (f"Measured {meta['date']} on {meta['cores']} cores (load {meta['load_at_start']} at start, "
               f"{meta['load_at_end']} at end), bridge at {meta['bridge_commit']}.\n")
    (out / "peers-table.md").write_text(peer_report.markdown_table(summary, sizes) + "\n" + machine)
    try:
        charts = peer_report.write_charts(out, summary)
        print("charts:", ", ".join(str(c.relative_to(ROOT)) if c.is_relative_to(ROOT) else str(c) for c in charts))
    except ImportError:
        print(MATPLOTLIB_HINT)
    print(f"table: {out / 'peers-table.md'}")


async def measure(quick: bool, rounds: int | None = None, out: Path | None = None) -> list[Figure]:
    """The peer figures (bench_limits' `peers` part); also writes the table, readings and charts
    to `out` (docs/performance/, or bench/out/peers/ when `quick`)."""
    sizes = sizes_for(quick)
    if rounds is not None:
        sizes["rounds"] = rounds
    readings, meta = await run(sizes["rounds"], sizes)
    write_outputs(out or (QUICK_OUT if quick else DOCS_OUT), readings, sizes, meta)
    return peer_report.figures(peer_report.summarize(readings))


def redraw(parser: argparse.ArgumentParser, out: Path) -> None:
    """The table and charts of an earlier run, from its peers.json (after a change to how they look)."""
    try:
        saved = json.loads((out / "peers.json").read_text())
        rounds, sizes, meta = saved["rounds"], saved["sizes"], saved["meta"]
        peer_report.summarize(rounds)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        parser.error(f"--redraw {out}: no readings to draw from in peers.json ({type(e).__name__}: {e})")
    write_outputs(out, rounds, sizes, meta)
    print(table(peer_report.figures(peer_report.summarize(rounds))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one round, smaller sizes (a few minutes)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3; 1 with --quick)")
    parser.add_argument("--out", type=Path, help="where the table, readings and charts go")
    parser.add_argument("--redraw", type=Path, metavar="DIR",
                        help="no run: the table and charts again from DIR/peers.json (into DIR)")
    args = parser.parse_args()
    if args.rounds is not None and args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out}: not a directory")
    if args.redraw is not None:
        redraw(parser, args.redraw)
        return
    print(f"{os.cpu_count()} cores; machine load {os.getloadavg()[0]:.2f} at start (the machine may be shared)")
    print(table(asyncio.run(measure(args.quick, args.rounds, args.out))))


if __name__ == "__main__":
    main()
