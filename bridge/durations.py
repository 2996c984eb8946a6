"""Durations as people write them in config: `90s`, `10m`, `2h`, `1d`, `1h30m`, or seconds."""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: object) -> timedelta:
    """Parse a positive duration; raise ValueError with a readable reason."""
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 10m, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        if re.fullmatch(r"\d+(\.\d+)?", text):
            seconds = float(text)
        else:
            pos, seconds = 0, 0.0
            for m in _PART.finditer(text):
                if m.start() != pos:
                    break
                seconds += float(m.group(1)) * _UNIT[m.group(2)]
                pos = m.end()
            if pos != len(text) or not text:
                raise ValueError(f"cannot read {value!r} as a duration (use e.g. 30s, 10m, 2h, 1d)")
    else:
        raise ValueError(f"expected a duration like 10m, got {value!r}")
    if seconds <= 0:
        raise ValueError(f"a duration must be positive, got {value!r}")
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """`1h30m`, `10m`, `45s`; under a second, `200ms`."""
    if timedelta(0) < delta < timedelta(seconds=1):
        return f"{round(delta.total_seconds() * 1000)}ms"
    seconds = int(delta.total_seconds())
    out = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            out += f"{seconds // size}{unit}"
            seconds %= size
    return out or "0s"
