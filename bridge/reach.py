"""Who a target reaches right now: `oncall:<rota>` becomes the person on call, and a person
who is away becomes their delegate (bridge.delegation), before bridge.people turns people
into their handles. The one place targets are resolved in time; channels only see handles.

    reach = Reach(store, clock)
    await reach.fresh(people)                  # windows and feeds read again when stale
    reach.resolve(people, ["oncall:primary", "person:ana", "slack:#ops"])
    # -> ["person:cy", "person:bo", "slack:#ops"]   (cy on call; ana away, bo standing in)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bridge.delegation import Delegations
from bridge.oncall import rota_name
from bridge.oncall_feeds import Feeds
from bridge.people import People, target_person
from bridge.ports import Clock
from bridge.store.concerns.kv import KVStore


class Reach:
    """Delegation windows and on-call feeds, applied to targets at the moment of use."""

    def __init__(self, store: KVStore, clock: Clock) -> None:
        self.clock = clock
        self.delegations = Delegations(store, clock)
        self.feeds = Feeds()

    async def fresh(self, people: People) -> None:
        """Read the windows and the rotas' feeds again where this copy is stale."""
        await self.delegations.fresh()
        if people.rotas:
            await self.feeds.fresh(people.rotas)

    def on_call(self, people: People, rota: str, now: datetime | None = None) -> str | None:
        """Who is on call in `rota` at `now` (None: nobody, or no such rota)."""
        found = people.rotas.get(rota)
        calendar = self.feeds.calendar(found.ical) if found is not None and found.ical else None
        return people.on_call(rota, now or self.clock.now(), calendar)

    def pin_on_call(self, people: People, entries: Sequence[str],
                    now: datetime | None = None) -> tuple[list[str], dict[str, str]]:
        """`entries` with each `oncall:<rota>` replaced by the person on call at `now`
        (`person:<name>`), and what each was pinned to: a request asked or escalated to a
        rota stays with whoever was on call then (a hand-over after does not take it away)."""
        now = now or self.clock.now()
        out: list[str] = []
        pinned: dict[str, str] = {}
        for entry in entries:
            rota = rota_name(entry)
            person = self.on_call(people, rota, now) if rota is not None else None
            if person is not None:
                pinned[entry] = f"person:{person}"
            out.append(pinned.get(entry, entry))
        return list(dict.fromkeys(out)), pinned

    def resolve(self, people: People, targets: Sequence[str], now: datetime | None = None) -> list[str]:
        """`targets` as they reach people at `now`: each `oncall:` the person on call (as it
        is when nobody is), each person away their delegate; the rest as they are."""
        now = now or self.clock.now()
        out: list[str] = []
        for target in targets:
            out.extend(self._resolve_one(people, target, now))
        return list(dict.fromkeys(out))

    def _resolve_one(self, people: People, target: str, now: datetime) -> list[str]:
        rota = rota_name(target)
        if rota is not None:
            person = self.on_call(people, rota, now)
            if person is None:
                return [target]  # reaches nobody: posting it records why
            target = f"person:{person}"
        if target.startswith("group:"):
            members = people.groups.get(people.group_named(target) or "", ())
            if not any(self.delegations.delegate_of(m, now) for m in members):
                return [target]
            return [self._stand_in(f"person:{m}", m, now) for m in members]
        person = self._person_of_target(people, target)
        return [self._stand_in(target, person, now)] if person else [target]

    def _stand_in(self, target: str, person: str, now: datetime) -> str:
        delegate = self.delegations.delegate_of(person, now)
        return f"person:{delegate}" if delegate else target

    @staticmethod
    def _person_of_target(people: People, target: str) -> str | None:
        if target.startswith("person:"):
            return people.person_named(target)
        handle = target_person(target)
        return people.person_of(handle) if handle else None

    def stands_in_for(self, people: People, person: str | None, now: datetime | None = None) -> list[str]:
        """Whom `person` answers for at `now` (people away whose chain ends with or passes them)."""
        if person is None:
            return []
        return self.delegations.stands_in_for(person, now or self.clock.now())
