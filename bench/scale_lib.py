"""What the scale benchmark's parts share: a measured figure next to its target, and how it prints.

Each part of `bench/bench_scale.py` (waiting, growth, intake) is a module with
`async def measure(quick: bool) -> list[Figure]`; the runner prints every figure in one table.
"""

from __future__ import annotations

import argparse
import importlib
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    area: str  # "waiting", "growth", "intake"
    name: str  # what was measured, e.g. "idle CPU, 10,000 long polls"
    value: str  # the reading with its unit, e.g. "0.4 % of a core"
    target: str  # the target, e.g. "≈ 0"
    met: bool | None = None  # None: a figure with no target (shown for comparison)


def table(figures: list[Figure]) -> str:
    """The figures as an aligned text table, one line each, with ok / MISS / - against the target."""
    rows = [("area", "figure", "measured", "target", "")]
    for f in figures:
        verdict = "-" if f.met is None else ("ok" if f.met else "MISS")
        rows.append((f.area, f.name, f.value, f.target, verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    return "\n".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows)


async def run_parts(parser: argparse.ArgumentParser, modules: dict[str, str], quick: bool, only: str) -> int:
    """Run each part named in `only` (comma-separated keys of `modules`: part → module with
    `measure(quick)`), print its figures as it ends and all of them at the end; 1 when a
    figure misses its target."""
    figures: list[Figure] = []
    for part in [p.strip() for p in only.split(",") if p.strip()]:
        if part not in modules:
            parser.error(f"unknown part {part!r}: choose from {', '.join(modules)}")
        started = time.monotonic()
        print(f"== {part}", flush=True)
        got = await importlib.import_module(modules[part]).measure(quick)
        figures.extend(got)
        print(table(got), f"\n({part}: {time.monotonic() - started:.0f} s)\n", flush=True)
    print("== all figures")
    print(table(figures))
    return 1 if any(f.met is False for f in figures) else 0
