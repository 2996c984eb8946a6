"""On-call rotas: the target `oncall:<rota>` is whoever is on call at that moment.

A rota is either a rotation in the config (people in turn, handed over at a time of day
every period, in a time zone, with overrides for holidays and swaps) or an iCalendar feed
(a file or a URL; each event's SUMMARY names the person on call during it):

    rotas:
      primary:
        people: [ana, bo, cy]
        start: 2026-11-02          # ana's first turn starts then, at the hand-over time
        handover: "09:00"
        every: 7d
        timezone: Europe/Berlin
        overrides:
          - {person: cy, from: "2026-12-24T09:00+01:00", until: "2026-12-27T09:00+01:00"}
      secondary:
        ical: /etc/hitl-bridge/secondary.ics   # or https://…; refreshed every `refresh`

The rotation counts in wall-clock time of its zone, so the hand-over stays at 09:00 across
a daylight-saving change. Resolution is pure (`on_call_in_rotation`, `on_call_in_calendar`);
reading and fetching feeds is bridge.oncall_feeds.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from bridge.config_daemon import Duration, StrictModel

PREFIX = "oncall:"
#: the most events of a feed looked at for one instant (a feed is a rota, not an archive)
MAX_EVENTS_AT_ONCE = 50


class Override(StrictModel):
    """`person` is on call from `from` until `until` instead of the rotation's turn."""

    person: str = Field(min_length=1, max_length=64)
    starts: datetime = Field(alias="from")
    until: datetime

    @model_validator(mode="after")
    def _in_order(self) -> Override:
        if self.starts.tzinfo is None or self.until.tzinfo is None:
            raise ValueError("overrides: give from/until with a UTC offset (e.g. 2026-12-24T09:00+01:00)")
        if self.until <= self.starts:
            raise ValueError(f"overrides: {self.person}'s until must be after from")
        return self


class Rota(StrictModel):
    """One rota of `rotas:`: a rotation (`people`, `start`, `handover`, `every`, `timezone`,
    `overrides`) or an iCalendar feed (`ical`, `refresh`)."""

    people: list[str] = Field(default_factory=list, max_length=200)
    start: date | None = None
    handover: time = time(9, 0)
    every: Duration = timedelta(days=7)
    timezone: str = "UTC"
    overrides: list[Override] = Field(default_factory=list, max_length=1000)
    #: an iCalendar file path or http(s) URL; each event's SUMMARY names who is on call
    ical: str | None = Field(default=None, max_length=2000)
    refresh: Duration = timedelta(minutes=15)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (use an IANA name such as Europe/Berlin)") from None
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> Rota:
        if self.ical is not None and self.people:
            raise ValueError("a rota is either a rotation (people:) or a feed (ical:), not both")
        if self.ical is None and not self.people:
            raise ValueError("a rota needs people: (a rotation) or ical: (a feed)")
        if self.people and self.start is None:
            raise ValueError("a rotation needs start: (the date its first person's turn begins)")
        if self.every < timedelta(hours=1):
            raise ValueError("every: a turn lasts at least an hour")
        return self

    def named_people(self) -> list[str]:
        """Everyone the rota names (its turns and its overrides)."""
        return list(dict.fromkeys([*self.people, *(o.person for o in self.overrides)]))


def rota_name(target: str) -> str | None:
    """The rota an `oncall:<rota>` target names, else None."""
    return target[len(PREFIX):].strip() if target.startswith(PREFIX) else None


def on_call_in_rotation(rota: Rota, now: datetime) -> str | None:
    """Who is on call at `now` in a rotation: an override in force, else the turn counted
    from `start` at `handover` in the rota's zone (nobody before the first turn)."""
    for override in rota.overrides:
        if override.starts <= now < override.until:
            return override.person
    if not rota.people or rota.start is None:
        return None
    zone = ZoneInfo(rota.timezone)
    first = datetime.combine(rota.start, rota.handover)  # wall clock of the zone
    wall = now.astimezone(zone).replace(tzinfo=None)
    if wall < first:
        return None
    turn = int((wall - first) / rota.every)
    return rota.people[turn % len(rota.people)]


def on_call_in_calendar(calendar: Any, now: datetime, known: set[str]) -> str | None:
    """Who the feed's event at `now` names: the first word of its SUMMARY that is a person
    in `known` (lower case), the latest-starting event first when several overlap."""
    import recurring_ical_events

    events = list(recurring_ical_events.of(calendar).at(now))[:MAX_EVENTS_AT_ONCE]
    events.sort(key=lambda e: _as_datetime(e.get("DTSTART").dt if e.get("DTSTART") else None), reverse=True)
    for event in events:
        for word in str(event.get("SUMMARY", "")).replace(",", " ").replace(":", " ").split():
            if word.lower() in known:
                return word.lower()
    return None


def _as_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=ZoneInfo("UTC"))
    if isinstance(value, date):
        return datetime.combine(value, time(0), ZoneInfo("UTC"))
    return datetime.min.replace(tzinfo=ZoneInfo("UTC"))
