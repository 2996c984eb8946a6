"""The peer comparison's readings made into figures, a Markdown table and PNG charts.

Pure functions over the rounds' readings ({peer: {metric key: value}} per round), so they are
tested without a server (tests/bench/test_peer_report.py). Charts need matplotlib (the `bench`
extra): `pip install -c requirements.lock -e '.[bench]'`.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scale_lib import Figure

AREA = "peers"
BRIDGE = "hitl-bridge"
Rounds = list[dict[str, dict[str, float]]]  # per round: {peer name: {metric key: value}}


@dataclass(frozen=True)
class Metric:
    key: str
    label: str  # what was measured, as the table says it
    unit: str
    lower_is_better: bool
    chart: str  # which chart it is drawn on ("" for none)
    target: str = "bridge ahead"  # or "bridge ≤ peer": counts where both at 0 is as good as it gets


METRICS = [
    Metric("intake_rate", "intake, 16 keep-alive clients", "creates/s", False, "intake"),
    Metric("intake_failed", "intake: creates that failed (5xx or no answer)", "failed", True, "",
           "bridge ≤ peer"),
    Metric("log_errors", "errors in the server's log", "tracebacks", True, "", "bridge ≤ peer"),
    Metric("intake_p99", "intake latency p99", "ms", True, "latency"),
    Metric("callback_p50", "answer → callback p50", "ms", True, "latency"),
    Metric("callback_p99", "answer → callback p99", "ms", True, "latency"),
    Metric("wait_p50", "answer → long poll returns p50", "ms", True, "latency"),
    Metric("wait_p99", "answer → long poll returns p99", "ms", True, "latency"),
    Metric("burst_last", "burst of 100 answers: last callback", "ms", True, "latency"),
    Metric("deadline_p50", "deadline → timeout callback, lateness p50", "ms", True, "latency"),
    Metric("deadline_p99", "deadline → timeout callback, lateness p99", "ms", True, "latency"),
    Metric("rss_idle", "RSS idle", "MiB", True, "memory"),
    Metric("rss_open", "RSS with the intake's requests open (warm-up + creates)", "MiB", True, "memory"),
    Metric("cpu_create", "CPU per 1,000 creates", "CPU s", True, "cpu"),
    Metric("cpu_lifecycle", "CPU per 1,000 requests (create, answer, callback)", "CPU s", True, "cpu"),
]
CHARTS = {
    "intake": "Intake: creates per second (higher is better)",
    "latency": "Latency (lower is better, log scale)",
    "memory": "Resident memory (lower is better)",
    "cpu": "Server CPU per 1,000 requests (lower is better)",
}


@dataclass(frozen=True)
class Spread:
    """A metric over the rounds: the median, and the lowest and highest round."""

    median: float
    low: float
    high: float
    rounds: int


def summarize(rounds: Rounds) -> dict[str, dict[str, Spread]]:
    """{peer: {metric key: Spread}} over the rounds that measured it."""
    peers: dict[str, dict[str, list[float]]] = {}
    for one in rounds:
        for peer, readings in one.items():
            for key, value in readings.items():
                peers.setdefault(peer, {}).setdefault(key, []).append(value)
    return {peer: {key: Spread(statistics.median(v), min(v), max(v), len(v)) for key, v in metrics.items()}
            for peer, metrics in peers.items()}


def ratio(metric: Metric, bridge: float, peer: float) -> float:
    """How many times better the bridge is (above 1: ahead; below 1: behind)."""
    good, bad = (peer, bridge) if metric.lower_is_better else (bridge, peer)
    if bad <= 0:
        return float("inf") if good > 0 else 1.0
    return good / bad


COUNTS = {"failed", "tracebacks"}


def fmt(value: float, unit: str) -> str:
    """A reading with its unit, to about three significant digits (counts as whole numbers)."""
    if value >= 100 or unit in COUNTS:
        number = f"{value:,.0f}"
    elif value >= 10:
        number = f"{value:.1f}"
    elif value >= 1:
        number = f"{value:.2f}"
    else:
        number = f"{value:.3f}"
    return f"{number} {unit}"


def ahead_by(metric: Metric, bridge: float, peer: float) -> str:
    """"15×", "behind, 1.3×", or for counts (failures) "fewer", "as many", "more"."""
    if metric.unit in COUNTS:
        return "as many" if bridge == peer else ("fewer" if bridge < peer else "more")
    r = ratio(metric, bridge, peer)
    return fmt_ratio(r) if r >= 1 else f"behind, {fmt_ratio(1 / r)}"


def fmt_ratio(r: float) -> str:
    if r == float("inf"):
        return "∞×"
    return f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×"


def peer_of(summary: dict[str, dict[str, Spread]]) -> str:
    others = [p for p in summary if p != BRIDGE]
    if len(others) != 1:
        raise ValueError(f"expected the bridge and one peer, got {sorted(summary)}")
    return others[0]


def figures(summary: dict[str, dict[str, Spread]]) -> list[Figure]:
    """One figure per metric both measured: both readings and the ratio, against the metric's target."""
    peer = peer_of(summary)
    out = []
    for m in METRICS:
        ours, theirs = summary[BRIDGE].get(m.key), summary[peer].get(m.key)
        if ours is None or theirs is None:
            missing = BRIDGE if ours is None else peer
            out.append(Figure(AREA, m.label, f"not measured on {missing}", m.target, None))
            continue
        r = ratio(m, ours.median, theirs.median)
        out.append(Figure(AREA, m.label, f"{fmt(ours.median, m.unit)} vs {fmt(theirs.median, m.unit)} "
                          f"({ahead_by(m, ours.median, theirs.median)})", m.target,
                          r > 1 or (m.target != "bridge ahead" and r == 1)))
    return out


def cell(spread: Spread | None, unit: str) -> str:
    if spread is None:
        return "not offered"
    if spread.rounds == 1 or spread.low == spread.high:
        return fmt(spread.median, unit)
    low, high = (fmt(v, unit).removesuffix(f" {unit}") for v in (spread.low, spread.high))
    return f"{fmt(spread.median, unit)} ({low}–{high})"


def markdown_table(summary: dict[str, dict[str, Spread]], sizes: dict[str, Any]) -> str:
    """The comparison as a Markdown table: median of the rounds (lowest–highest round) and the ratio."""
    peer = peer_of(summary)
    rows = [f"| Figure | hitl-bridge | {peer} | bridge ahead by |", "|---|---:|---:|---:|"]
    for m in METRICS:
        ours, theirs = summary[BRIDGE].get(m.key), summary[peer].get(m.key)
        by = "-" if ours is None or theirs is None else ahead_by(m, ours.median, theirs.median)
        rows.append(f"| {m.label} | {cell(ours, m.unit)} | {cell(theirs, m.unit)} | {by} |")
    rounds = max((s.rounds for s in summary[BRIDGE].values()), default=0)
    listed = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in sizes.items())
    note = (f"\nMedian of {rounds} interleaved round{'s' if rounds != 1 else ''} (lowest–highest round in "
            f"brackets). Sizes: {listed}.\n")
    return "\n".join(rows) + "\n" + note


def write_results(out: Path, rounds: Rounds, sizes: dict[str, Any], meta: dict[str, Any]) -> Path:
    """The raw readings of every round, as JSON (the table and charts can be redrawn from it)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "peers.json"
    path.write_text(json.dumps({"meta": meta, "sizes": sizes, "rounds": rounds}, indent=1, sort_keys=True) + "\n")
    return path


def write_charts(out: Path, summary: dict[str, dict[str, Spread]]) -> list[Path]:
    """One PNG per chart of METRICS: grouped horizontal bars, both servers, the rounds' spread as
    error bars, each bar labelled with its reading. Raises ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peer = peer_of(summary)
    colors = {BRIDGE: "#2e7d32", peer: "#9e9e9e"}
    written = []
    out.mkdir(parents=True, exist_ok=True)
    for chart, title in CHARTS.items():
        metrics = [m for m in METRICS if m.chart == chart and m.key in summary[BRIDGE] and m.key in summary[peer]]
        if not metrics:
            continue
        fig, ax = plt.subplots(figsize=(9, 1.0 + 0.7 * len(metrics)), dpi=110)
        height = 0.38
        for j, name in enumerate((BRIDGE, peer)):
            ys = [i + (j - 0.5) * height for i in range(len(metrics))]
            spreads = [summary[name][m.key] for m in metrics]
            values = [s.median for s in spreads]
            errors = [[s.median - s.low for s in spreads], [s.high - s.median for s in spreads]]
            ax.barh(ys, values, height=height, color=colors[name], label=name, xerr=errors,
                    error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#424242"})
            for y, spread, m in zip(ys, spreads, metrics, strict=True):  # past the error bar's end
                ax.annotate(fmt(spread.median, m.unit), (spread.high, y), xytext=(5, 0), textcoords="offset points",
                            va="center", fontsize=8)
        ax.set_yticks(range(len(metrics)), [m.label for m in metrics], fontsize=9)
        ax.invert_yaxis()
        units = sorted({m.unit for m in metrics})
        ax.set_xlabel(", ".join(units))
        if chart == "latency":  # ratios of 100× and more: a log scale, from below the smallest bar
            ax.set_xscale("log")
            lowest = min(summary[name][m.key].low for name in (BRIDGE, peer) for m in metrics)
            ax.set_xlim(10 ** math.floor(math.log10(max(lowest, 1e-3) * 0.8)), ax.get_xlim()[1] * 3)
        else:
            ax.set_xlim(0, ax.get_xlim()[1] * 1.25)
        fig.suptitle(title, fontsize=11, x=0.01, ha="left")
        fig.legend(*ax.get_legend_handles_labels(), loc="upper right", ncol=2, fontsize=9, frameon=False)
        ax.grid(axis="x", alpha=0.3)
        fig.tight_layout()
        fig.subplots_adjust(top=1 - 0.45 / fig.get_figheight())  # room for the title and legend
        path = out / f"peers-{chart}.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written
