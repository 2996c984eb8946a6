"""iCalendar feeds of on-call rotas (`rotas.<name>.ical`): read from a file or fetched from
the URL the config names (and nothing else), kept parsed, read again every `refresh`.

A feed that cannot be read or parsed keeps its last good copy: who is on call is answered
from it, and the failure is logged and kept (`problems`) for doctor and the logs. A feed
with no good copy yet resolves to nobody, so its `oncall:` target reaches nobody and the
post says so (fail closed: nobody is guessed).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.oncall import Rota

log = logging.getLogger("hitl_bridge.oncall")

#: the largest feed read (a rota's calendar is small; a huge one is a mistake or an attack)
MAX_FEED_BYTES = 2 * 1024 * 1024
FETCH_TIMEOUT_S = 10.0


class FeedError(ValueError):
    """A feed that cannot be read or parsed (the message says which and why)."""


@dataclass
class Feed:
    """One source's last good calendar, when it was read (loop time) and its last failure."""

    calendar: Any = None
    read_at: float | None = None
    problem: str | None = None


def parse_calendar(data: bytes, where: str) -> Any:
    """The calendar in `data`; FeedError when it is not iCalendar."""
    from icalendar import Calendar

    if len(data) > MAX_FEED_BYTES:
        raise FeedError(f"{where}: larger than {MAX_FEED_BYTES // 1024 // 1024} MB")
    try:
        return Calendar.from_ical(data)
    except Exception as exc:  # the library raises ValueError and others for broken input
        raise FeedError(f"{where}: not an iCalendar file ({type(exc).__name__}: {str(exc)[:200]})") from None


def read_file(source: str) -> bytes:
    path = Path(source).expanduser()
    try:
        with path.open("rb") as handle:
            return handle.read(MAX_FEED_BYTES + 1)
    except OSError as exc:
        raise FeedError(f"{source}: cannot be read ({exc.strerror or exc})") from None


async def fetch(source: str) -> bytes:
    """GET the URL the config names (no redirects to elsewhere, a size cap, a timeout)."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_S, follow_redirects=False) as client, \
                client.stream("GET", source) as response:
            if response.status_code != 200:
                raise FeedError(f"{source}: answered HTTP {response.status_code}")
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_FEED_BYTES:
                    raise FeedError(f"{source}: larger than {MAX_FEED_BYTES // 1024 // 1024} MB")
            return body
    except httpx.HTTPError as exc:
        raise FeedError(f"{source}: cannot be fetched ({type(exc).__name__}: {exc})") from None


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


class Feeds:
    """The feeds of the running config's rotas, by source (kept across reloads)."""

    def __init__(self) -> None:
        self._feeds: dict[str, Feed] = {}

    def calendar(self, source: str) -> Any:
        """The last good calendar of `source`, or None."""
        feed = self._feeds.get(source)
        return feed.calendar if feed is not None else None

    def problems(self) -> dict[str, str]:
        """Sources whose last read failed, with why."""
        return {s: f.problem for s, f in self._feeds.items() if f.problem}

    async def fresh(self, rotas: dict[str, Rota]) -> None:
        """Read every feed not read within its rota's `refresh` (a failure keeps the last copy)."""
        now = asyncio.get_running_loop().time()
        for rota in rotas.values():
            if rota.ical is None:
                continue
            feed = self._feeds.setdefault(rota.ical, Feed())
            if feed.read_at is not None and now - feed.read_at < rota.refresh.total_seconds():
                continue
            feed.read_at = now
            try:
                data = await fetch(rota.ical) if is_url(rota.ical) else await asyncio.to_thread(read_file, rota.ical)
                feed.calendar = await asyncio.to_thread(parse_calendar, data, rota.ical)
                feed.problem = None
            except FeedError as exc:
                kept = "keeping the last good copy" if feed.calendar is not None else "nobody is on call from it"
                if feed.problem != str(exc):
                    log.warning("on-call feed %s; %s", exc, kept)
                feed.problem = str(exc)
