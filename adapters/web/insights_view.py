"""The inbox's insights page, pure: `bridge.audit.insights` → rows with small inline-SVG
charts (a stacked bar of how requests ended, a bar of median and p90 time to decide).
No JavaScript and no chart library: each chart is a few <rect>s laid out here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.audit.insights import Insights, Tally, Verdict
from bridge.durations import format_duration

WIDTH = 240  # px of a bar at its longest
#: a colour class per verdict (inbox.css), in the order the stacked bar draws them
ORDER = (Verdict.approved, Verdict.rejected, Verdict.answered, Verdict.automatic, Verdict.expired)


@dataclass(frozen=True)
class Segment:
    verdict: str
    count: int
    x: float
    width: float


@dataclass(frozen=True)
class Row:
    name: str
    total: int
    counts: dict[str, int]
    segments: list[Segment]
    median: str
    p90: str
    median_width: float
    p90_width: float


def _seconds(value: float | None) -> str:
    if value is None:
        return "–"
    from datetime import timedelta

    return format_duration(timedelta(seconds=round(value))) if value >= 1 else f"{value:.1f}s"


def row(name: str, tally: Tally, *, longest: float) -> Row:
    x = 0.0
    segments = []
    for verdict in ORDER:
        count = tally.counts[verdict]
        if count:
            width = WIDTH * count / max(1, tally.total)
            segments.append(Segment(verdict.value, count, round(x, 1), round(width, 1)))
            x += width
    scale = WIDTH / longest if longest > 0 else 0.0
    return Row(name, tally.total, {v.value: tally.counts[v] for v in ORDER}, segments,
               _seconds(tally.median), _seconds(tally.p90), round((tally.median or 0) * scale, 1),
               round((tally.p90 or 0) * scale, 1))


def rows(tallies: dict[str, Tally]) -> list[Row]:
    longest = max((t.p90 or 0 for t in tallies.values()), default=0.0)
    return [row(name, tally, longest=longest) for name, tally in sorted(tallies.items(), key=lambda i: -i[1].total)]


def page_context(found: Insights) -> dict[str, Any]:
    return {"overall": row("All routes", found.overall, longest=found.overall.p90 or 0),
            "routes": rows(found.by_route), "people": rows(found.by_person), "decisions": found.decisions,
            "truncated": found.truncated, "verdicts": [v.value for v in ORDER], "width": WIDTH}
