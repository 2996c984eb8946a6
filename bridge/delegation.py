"""Delegation: a person away from one instant until another hands what waits for them to
another person ("away until Friday 18:00, delegate to bo").

Windows are kept in the store's key/value space (namespace `delegations`, one entry per
person who is away, expiring when the window ends), so every replica reads the same ones
and they survive a restart. Each process holds a copy it reads again at most every
`REFRESH_S` seconds; whether a window is in force is decided at the moment of use
(`starts <= now < until`), so a window starts and ends on time whatever was read when.

A delegate away in turn hands on to their own delegate: a chain, followed at most
`MAX_CHAIN` steps. A window that would close a loop (ana → bo while bo → ana) is refused
when it is set; a loop that still arises (two replicas setting windows at once) is cut
where it closes. Routing, reminders and escalation reach the end of the chain
(bridge.reach); the delegate answers as themselves, recorded "for" who they stand in for
(bridge.answering.standing_in), and quorum counts them once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bridge.errors import BridgeError
from bridge.people import People
from bridge.ports import Clock
from bridge.store.concerns.kv import KVStore

NAMESPACE = "delegations"
#: the most hand-overs followed from the person a request names to who gets it
MAX_CHAIN = 3
#: the longest window one may set
LONGEST = timedelta(days=366)
#: how stale this process's copy of the windows may be (another replica may have set one)
REFRESH_S = 5.0


class DelegationRefused(BridgeError):
    """A window that cannot be set: the message says why (unknown person, oneself, the past,
    a loop)."""

    status = 422


@dataclass(frozen=True)
class Delegation:
    """`person` is away from `starts` until `until`; `delegate` answers for them meanwhile."""

    person: str
    delegate: str
    starts: datetime
    until: datetime
    set_by: str = ""

    def in_force(self, now: datetime) -> bool:
        return self.starts <= now < self.until

    def as_json(self) -> dict[str, Any]:
        return {"person": self.person, "delegate": self.delegate, "starts": self.starts.isoformat(),
                "until": self.until.isoformat(), "set_by": self.set_by}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Delegation:
        return cls(str(data["person"]), str(data["delegate"]), datetime.fromisoformat(data["starts"]),
                   datetime.fromisoformat(data["until"]), str(data.get("set_by", "")))


class Delegations:
    """The delegation windows of one bridge: set, ended, and followed to who stands in."""

    def __init__(self, store: KVStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._windows: dict[str, Delegation] = {}
        self._read_at: float | None = None

    # reading ---------------------------------------------------------------------------
    async def fresh(self) -> None:
        """Read the windows again when this copy is older than REFRESH_S (or never read)."""
        loop_now = asyncio.get_running_loop().time()
        if self._read_at is None or loop_now - self._read_at >= REFRESH_S:
            await self.load()

    async def load(self) -> None:
        """Read every window that has not ended."""
        windows: dict[str, Delegation] = {}
        for key, data in await self.store.kv_items(NAMESPACE, now=self.clock.now()):
            try:
                windows[key] = Delegation.from_json(data)
            except (KeyError, ValueError, TypeError):
                continue  # not ours to interpret: ignored, never followed
        self._windows = windows
        self._read_at = asyncio.get_running_loop().time()

    def listing(self, now: datetime | None = None) -> list[Delegation]:
        """The windows not yet ended at `now`, by person."""
        now = now or self.clock.now()
        return sorted((d for d in self._windows.values() if d.until > now), key=lambda d: d.person)

    def chain(self, person: str, now: datetime | None = None) -> list[str]:
        """`person` then each delegate in force at `now`, at most MAX_CHAIN hand-overs, cut
        before anyone met twice."""
        now = now or self.clock.now()
        out = [person]
        while len(out) <= MAX_CHAIN:
            window = self._windows.get(out[-1])
            if window is None or not window.in_force(now) or window.delegate in out:
                break
            out.append(window.delegate)
        return out

    def delegate_of(self, person: str, now: datetime | None = None) -> str | None:
        """Who gets what waits for `person` at `now` (the end of their chain), or None when
        they are not away."""
        chain = self.chain(person, now)
        return chain[-1] if len(chain) > 1 else None

    def stands_in_for(self, person: str, now: datetime | None = None) -> list[str]:
        """The people whose chain passes through `person` at `now` (whom they answer for)."""
        now = now or self.clock.now()
        return sorted(p for p in self._windows if p != person and person in self.chain(p, now)[1:])

    # writing ---------------------------------------------------------------------------
    async def set(self, people: People, person: str, delegate: str, until: datetime, *,
                  starts: datetime | None = None, by: str = "") -> Delegation:
        """Record that `person` is away from `starts` (now) until `until`, `delegate` standing
        in; DelegationRefused for an unknown person, oneself, a window in the past or longer
        than a year, or one that would close a loop."""
        now = self.clock.now()
        who = people.person_named(person) or people.person_of(person)
        if who is None:
            raise DelegationRefused(f"{person[:64]!r} is not a person of people:")
        stand_in = people.person_named(delegate) or people.person_of(delegate)  # a name or a handle
        if stand_in is None:
            raise DelegationRefused(f"{delegate[:64]!r} is not a person of people: (the delegate must be one)")
        if stand_in == who:
            raise DelegationRefused(f"{who} cannot delegate to themselves")
        starts = max(starts or now, now)
        if until.tzinfo is None or starts.tzinfo is None:
            raise DelegationRefused("give the times with a time zone (e.g. 2026-12-24T18:00+01:00)")
        if until <= now:
            raise DelegationRefused(f"until {until.isoformat()} has passed: a window must end in the future")
        if until <= starts:
            raise DelegationRefused("the window must end after it starts")
        if until - now > LONGEST:
            raise DelegationRefused("a window may last at most a year")
        await self.load()
        onward = self._reachable(stand_in)
        if who in onward:
            path = " → ".join([who, stand_in, *onward[: onward.index(who) + 1]])
            raise DelegationRefused(f"{who} → {stand_in} would close a loop ({path}): end one of the "
                                    "windows first")
        window = Delegation(who, stand_in, starts, until, by)
        await self.store.kv_put(NAMESPACE, who, window.as_json(), expires_at=until)
        self._windows[who] = window
        return window

    async def end(self, people: People, person: str) -> bool:
        """End `person`'s window now; True when there was one."""
        who = people.person_named(person) or person
        ended = await self.store.kv_delete(NAMESPACE, who)
        found = self._windows.pop(who, None)
        return ended or found is not None

    def _reachable(self, person: str) -> list[str]:
        """Everyone a chain from `person` reaches through windows not yet ended (at any time
        in them: a loop in the future is a loop too)."""
        now = self.clock.now()
        out: list[str] = []
        current = person
        while (window := self._windows.get(current)) is not None and window.until > now \
                and window.delegate not in out and len(out) <= MAX_CHAIN * 4:
            out.append(window.delegate)
            current = window.delegate
        return out
