"""People and groups: who a verified handle belongs to, so that quorum counts people.

An answer comes from a *handle* an adapter verified: `slack:U0123ABC`, `telegram:42`,
`web:ana` (a personal inbox login), `email:ana@example.com`, `api:ci` (a named API token).
The config's `people:` maps handles to a person and `groups:` names sets of people:

    people:
      ana: [slack:U0123ABC, telegram:123456789, web:ana, email:ana@example.com]
    groups:
      oncall: [ana, bo]

A *voter* is what quorum counts: `person:ana` for any of Ana's handles, the handle itself
for one that belongs to nobody, and `local` for everyone on an open loopback bridge (no
credential tells them apart). This module is the only place that resolves identities;
adapters only report the handle they verified.

Every handle and name is compared in one canonical spelling (`canonical_handle`,
`People.person_named`), whatever spelling the config, a request or an adapter used: an
email address in lower case (domain and local part), a Slack id without its `@`, person
and group names without regard to case. Web logins and API token names are the config's
own keys and are compared exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from bridge.models import Responder
from bridge.oncall import Rota, on_call_in_calendar, on_call_in_rotation
from bridge.specs import HandleError, channel_spec, channel_specs, handle_spec, identity_specs

#: platforms of the core's own (a handle is `<platform>:<id>`): named API tokens
CORE_PLATFORMS = ("api",)
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
#: the one identity of every caller of an open bridge (loopback, no token, no login)
LOCAL = "local"


def handle_platforms() -> tuple[str, ...]:
    """Platforms whose ids an adapter verifies: every channel's (bridge.specs), the sources'
    that verify people (bridge.specs.IdentitySpec), then the core's."""
    return (*(s.name for s in channel_specs()), *(s.name for s in identity_specs()), *CORE_PLATFORMS)


class PeopleError(ValueError):
    """The `people:` / `groups:` config does not hold together (message names the entry)."""


def normalize_handle(text: str) -> str:
    """`<platform>:<id>` in its platform's one spelling (the channel's spec says how, e.g. an
    email address in lower case); raise PeopleError for anything that is not a handle of a
    known platform, or that its platform refuses."""
    platform, sep, ident = text.strip().partition(":")
    ident = ident.strip()
    platforms = handle_platforms()
    if not sep or not ident or platform not in platforms:
        raise PeopleError(f"{text[:80]!r} is not a handle: use one of "
                          + ", ".join(f"{p}:…" for p in platforms))
    spec = handle_spec(platform)
    if spec is not None:
        try:
            ident = spec.normalize(ident)
        except HandleError as exc:
            raise PeopleError(f"{text[:80]!r}: {exc}") from None
    return f"{platform}:{ident}"


def canonical_handle(text: str) -> str:
    """`text` in the one spelling handles are compared in: `normalize_handle` for a handle
    of a known platform, else `text` as it is (a channel, a name, another platform's id)."""
    try:
        return normalize_handle(text)
    except PeopleError:
        return text.strip()


def canonical_target(target: str) -> str:
    """A notify target in one spelling, as its channel's spec writes it (the same mailbox
    however it is written); every other target as it is (a channel, a DM, a chat)."""
    platform, sep, ident = target.strip().partition(":")
    spec = channel_spec(platform) if sep and ident.strip() else None
    return f"{platform}:{spec.canonical_target(ident)}" if spec is not None else target


def handle_variants(handle: str) -> set[str]:
    """The ways a config or an engine may write one handle, in lower case (`@U1` for `U1`)."""
    platform, _, ident = handle.partition(":")
    spec = channel_spec(platform)
    extra = spec.variants(ident) if spec is not None else set()
    return {handle.lower(), *(f"{platform}:{v}".lower() for v in extra)}


def target_person(entry: str) -> str | None:
    """The handle of the one person a target or responders entry names (`<platform>:@U1` →
    `<platform>:U1`), else None (a group chat, a channel, a form that names nobody)."""
    platform, sep, ident = entry.partition(":")
    spec = channel_spec(platform) if sep and ident else None
    person = spec.person_of_target(ident) if spec is not None else None
    return f"{platform}:{person}" if person is not None else None


def local_platforms() -> frozenset[str]:
    """Platforms whose `local` caller is everyone on an open loopback bridge."""
    return frozenset({*CORE_PLATFORMS, "cli", *(s.name for s in channel_specs() if s.local_callers)})


def shared_voters() -> frozenset[str]:
    """Voters that are everyone who knows a shared secret (the shared inbox password)."""
    return frozenset(f"{s.name}:{s.shared_identity}" for s in channel_specs() if s.shared_identity)


class People:
    """The people and groups of one config; immutable once built (a reload builds a new one)."""

    def __init__(self, people: Mapping[str, Iterable[str]] | None = None,
                 groups: Mapping[str, Iterable[str]] | None = None,
                 rotas: Mapping[str, Rota] | None = None) -> None:
        self.people: dict[str, tuple[str, ...]] = {}
        self.groups: dict[str, tuple[str, ...]] = {}
        #: on-call rotas (bridge.oncall), their people spelled as people: spells them
        self.rotas: dict[str, Rota] = {}
        self._owner: dict[str, str] = {}
        self._names: dict[str, str] = {}  # a name in lower case -> as the config spells it
        self._group_names: dict[str, str] = {}
        for name, handles in (people or {}).items():
            if not NAME_PATTERN.match(name):
                raise PeopleError(f"people.{name[:40]}: a person's name is 1-64 letters, digits or '_.@-'")
            if self._names.setdefault(name.lower(), name) != name:
                raise PeopleError(f"people.{name}: the same name as {self._names[name.lower()]} "
                                  "(names are compared without regard to case)")
            normalized = []
            for raw in handles:
                try:
                    handle = normalize_handle(str(raw))
                except PeopleError as exc:
                    raise PeopleError(f"people.{name}: {exc}") from None
                other = self._owner.get(handle)
                if other is not None and other != name:
                    raise PeopleError(f"people.{name}: {handle} already belongs to {other} "
                                      "(a handle is one person's)")
                self._owner[handle] = name
                normalized.append(handle)
            self.people[name] = tuple(dict.fromkeys(normalized))
        for group, members in (groups or {}).items():
            if not NAME_PATTERN.match(group):
                raise PeopleError(f"groups.{group[:40]}: a group's name is 1-64 letters, digits or '_.@-'")
            if self._group_names.setdefault(group.lower(), group) != group:
                raise PeopleError(f"groups.{group}: the same name as {self._group_names[group.lower()]} "
                                  "(names are compared without regard to case)")
            listed = [str(m).removeprefix("person:") for m in members]
            unknown = [m for m in listed if self.person_named(m) is None]
            if unknown:
                raise PeopleError(f"groups.{group}: {', '.join(unknown)} not in people:")
            self.groups[group] = tuple(dict.fromkeys(self._names[m.lower()] for m in listed))
        for name, rota in (rotas or {}).items():
            if not NAME_PATTERN.match(name):
                raise PeopleError(f"rotas.{name[:40]}: a rota's name is 1-64 letters, digits or '_.@-'")
            unknown = [p for p in rota.named_people() if self.person_named(p) is None]
            if unknown:
                raise PeopleError(f"rotas.{name}: {', '.join(unknown)} not in people:")
            self.rotas[name] = rota.model_copy(update={
                "people": [self._names[p.lower()] for p in rota.people],
                "overrides": [o.model_copy(update={"person": self._names[o.person.lower()]})
                              for o in rota.overrides]})

    def __bool__(self) -> bool:
        return bool(self.people)

    # who -------------------------------------------------------------------------------
    def person_named(self, name: str) -> str | None:
        """The person `name` (or `person:name`) is, in any case: `Ana` is `ana`."""
        return self._names.get(name.strip().removeprefix("person:").lower())

    def group_named(self, name: str) -> str | None:
        """The group `name` (or `group:name`) is, in any case."""
        return self._group_names.get(name.strip().removeprefix("group:").lower())

    def canonical_entry(self, entry: str) -> str:
        """A responders entry in one spelling: `person:Ana` → `person:ana`, `group:OnCall` →
        `group:oncall` (as the config spells them), a handle → `canonical_handle`."""
        entry = entry.strip()
        if entry.startswith("person:"):
            return f"person:{self.person_named(entry) or entry[len('person:'):]}"
        if entry.startswith("group:"):
            return f"group:{self.group_named(entry) or entry[len('group:'):]}"
        return canonical_handle(entry)

    def person_of(self, handle: str) -> str | None:
        """The person a handle belongs to, if any."""
        try:
            return self._owner.get(normalize_handle(handle))
        except PeopleError:
            return None

    def voter(self, responder: Responder) -> str:
        """What quorum counts for `responder`."""
        if responder.platform == "person":
            return f"person:{self.person_named(responder.user_id) or responder.user_id}"
        if responder.user_id == LOCAL and responder.platform in local_platforms():
            return LOCAL
        person = self.person_of(responder.key)
        return f"person:{person}" if person else canonical_handle(responder.key)

    def voter_of(self, entry: str) -> str:
        """The voter a config or request entry names: `person:ana`, a person's bare name,
        one of their handles, or a handle of nobody (itself)."""
        entry = entry.strip()
        if entry.startswith("person:"):
            return self.canonical_entry(entry)
        person = self.person_named(entry) or self.person_of(entry)
        if person:
            return f"person:{person}"
        return canonical_handle(entry)

    def display(self, responder: Responder) -> str:
        """The person's name for a handle of theirs, else what the adapter reported."""
        voter = self.voter(responder)
        return voter.removeprefix("person:") if voter.startswith("person:") else responder.display

    def on_call(self, rota: str, now: datetime, calendar: Any = None) -> str | None:
        """The person on call in `rota` at `now` (a feed's rota reads `calendar`, its last
        good copy), or None: no such rota, nobody's turn, or no copy of its feed yet."""
        found = self.rotas.get(rota.strip())
        if found is None:
            return None
        if found.ical is None:
            return on_call_in_rotation(found, now)
        if calendar is None:
            return None
        person = on_call_in_calendar(calendar, now, set(self._names))
        return self._names.get(person) if person else None

    # responders entries ------------------------------------------------------------------
    def voters_named(self, entry: str) -> set[str] | None:
        """The voters a `responders` entry admits: `person:x` → {person:x}, `group:y` → its
        members, a handle → its voter. None for entries only a channel can resolve (a Slack
        user group, a Telegram group chat, a channel)."""
        if entry.startswith("group:"):
            return {f"person:{m}" for m in self.groups.get(self.group_named(entry) or "", ())}
        if entry.startswith("person:"):
            return {self.canonical_entry(entry)}
        try:
            handle = normalize_handle(entry)
        except PeopleError:
            return None
        person = self._owner.get(handle)
        return {f"person:{person}" if person else handle}

    def admits(self, entry: str, responder: Responder) -> bool:
        """True when `entry` (of a request's `responders`) names `responder`, by any of the
        handles of the same person."""
        voters = self.voters_named(entry)
        return voters is not None and self.voter(responder) in voters

    def unknown_references(self, entries: Iterable[str]) -> list[str]:
        """`person:` / `group:` entries that name nobody in this config."""
        out = []
        for entry in entries:
            if entry.startswith("person:") and self.person_named(entry) is None:
                out.append(entry)
            elif entry.startswith("group:") and self.group_named(entry) is None:
                out.append(entry)
            elif entry.startswith("oncall:") and entry[len("oncall:"):].strip() not in self.rotas:
                out.append(entry)
        return out

    def targets_of(self, entry: str) -> list[str] | None:
        """Where a `person:` / `group:` notify target reaches its people: for each of their
        handles, the target its channel's spec names (a DM, a private chat, a mailbox; an
        inbox or API login reaches nobody). None for any other entry (a channel target already).
        `oncall:<rota>` reaches whom it may (the rotation's people; a feed's, anyone's): for
        checking a config; at the moment of posting it is the person on call (bridge.reach)."""
        if entry.startswith("oncall:"):
            rota = self.rotas.get(entry[len("oncall:"):].strip())
            names = (rota.named_people() or list(self.people)) if rota is not None else []
            return [t for name in names for t in self.targets_of(f"person:{name}") or []]
        if not entry.startswith(("person:", "group:")):
            return None
        out = []
        for handle in self.handles_of(entry):
            platform, _, ident = handle.partition(":")
            spec = channel_spec(platform)
            target = spec.dm_target(ident) if spec is not None else None
            if target is not None:
                out.append(target)
        return out

    def handles_of(self, entry: str) -> list[str]:
        """Every handle of the people an entry names (for channels: whom to DM, whom a
        "waiting for me" view concerns)."""
        voters = self.voters_named(entry) or set()
        out: list[str] = []
        for voter in sorted(voters):
            if voter.startswith("person:"):
                out.extend(self.people.get(voter[len("person:"):], ()))
            else:
                out.append(voter)
        return out
