"""One time format in every human-facing place (chat messages, inbox, email, CLI): 24-hour,
with the zone. A guard over the sources: no 12-hour clock (%I, %p), every strftime clock names
its zone, no Slack date token (rendered "09:26 PM" for many readers), and the inbox's local
clocks ask for a 24-hour cycle and the zone whatever the browser's locale."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HUMAN_FACING = [p for d in ("bridge", "adapters") for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".html", ".js")]
MACHINE_STAMPS = {"bridge/store/sqlite_faults.py"}  # a file name (…T…Z), not shown as a time


def test_no_twelve_hour_clock_and_every_clock_names_its_zone() -> None:
    problems = []
    for path in HUMAN_FACING:
        name = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        for fmt in re.findall(r"strftime\((?:f?)[\"']([^\"']*)[\"']\)", text):
            if "%I" in fmt or "%p" in fmt:
                problems.append(f"{name}: 12-hour clock {fmt!r}")
            elif "%H" in fmt and "UTC" not in fmt and "%Z" not in fmt and name not in MACHINE_STAMPS:
                problems.append(f"{name}: a clock without its zone {fmt!r}")
        if "<!date^" in text:
            problems.append(f"{name}: a Slack date token")
        for call in re.findall(r"toLocaleTimeString\([^)]*\)", text):
            if "h23" not in call or "timeZoneName" not in call:
                problems.append(f"{name}: {call} follows the browser's 12/24-hour habit or hides the zone")
    assert problems == []
