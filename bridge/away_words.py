""""away bo until 2026-12-24T18:00+01:00" (or "away bo for 3d", "… from <time> until <time>"):
the words a chat command takes for a delegation window, read once for every channel."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bridge.durations import parse_duration

USAGE = ("away <person> until <time> (ISO 8601 with its offset, e.g. 2026-12-24T18:00+01:00), "
         "or away <person> for <duration> (e.g. 3d); add from <time> to start later")


class AwayWordsError(ValueError):
    """The words do not say who and until when (the message shows how)."""


@dataclass(frozen=True)
class AwayWords:
    delegate: str
    until: datetime
    starts: datetime | None = None


def instant(text: str) -> datetime:
    """An ISO 8601 time with its UTC offset (AwayWordsError says what is wrong)."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise AwayWordsError(f"{text[:40]!r} is not a time: {USAGE}") from None
    if value.tzinfo is None:
        raise AwayWordsError(f"{text[:40]!r} has no UTC offset (add +01:00, or Z)")
    return value


def parse_away(words: list[str], now: datetime) -> AwayWords:
    """`<delegate> (until <time> | for <duration>) [from <time>]`, after the word `away`."""
    if len(words) < 3 or len(words) > 5 or len(words) % 2 == 0:
        raise AwayWordsError(USAGE)
    delegate, pairs = words[0], dict(zip(words[1::2], words[2::2], strict=True))
    unknown = set(pairs) - {"until", "for", "from"}
    if unknown or ("until" in pairs) == ("for" in pairs):
        raise AwayWordsError(USAGE)
    starts = instant(pairs["from"]) if "from" in pairs else None
    if "until" in pairs:
        until = instant(pairs["until"])
    else:
        try:
            until = (starts or now) + parse_duration(pairs["for"])
        except ValueError as exc:
            raise AwayWordsError(str(exc)) from None
    return AwayWords(delegate, until, starts)
