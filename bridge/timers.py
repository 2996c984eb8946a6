"""Timer arithmetic: absolute UTC instants for a request's deadline, reminders and escalation.

Pure functions only (no I/O). Every instant is derived from values stored with the request
(`created_at`, `deadline`, `next_reminder_at`, `next_escalation_at`) and its route, so the
scheduler can rebuild everything from the store after a restart.

Escalation steps: level `i` is first due at `created_at + after_i`. A level with
`repeat: N` pages its targets again N times, every `gap_i` (its `after` minus the previous
level's `after`, or its own `after` for the first level), and every later level is pushed
back by `N * gap_i` — the paging-policy reading of "repeat this level N times before
moving on".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bridge.config_routes import EscalationLevel, Route
from bridge.models import Request
from bridge.people import People, target_person

#: instants closer than this are the same instant (stored timestamps keep microseconds)
EPSILON = timedelta(milliseconds=1)
#: the longest wait any request gets (a huge or infinite `timeout_s` is capped here)
LONGEST = timedelta(days=366)


@dataclass(frozen=True)
class Step:
    """One escalation instant: `level` (1-based) at `offset` after creation; `repeat` 0 is
    the first post of that level, 1..N its repeats."""

    offset: timedelta
    level: int
    repeat: int


def escalation_steps(levels: list[EscalationLevel]) -> list[Step]:
    """All escalation instants of a route, in time order (see the module docstring)."""
    steps: list[Step] = []
    shift = timedelta(0)
    previous_after = timedelta(0)
    for index, level in enumerate(levels, start=1):
        gap = level.after - previous_after
        base = level.after + shift
        steps.append(Step(base, index, 0))
        for r in range(1, level.repeat + 1):
            steps.append(Step(base + gap * r, index, r))
        shift += gap * level.repeat
        previous_after = level.after
    return steps


def initial_timers(request: Request, route: Route, now: datetime) -> None:
    """Set deadline / next_reminder_at / next_escalation_at from the request and its route.

    The request's own `deadline` or `timeout_s` overrides the route's `timeout`, capped by
    the route's `max_timeout` and by LONGEST (366 days)."""
    deadline = request.deadline
    if deadline is None and request.timeout_s is not None:
        deadline = now + timedelta(seconds=min(request.timeout_s, LONGEST.total_seconds()))
    if deadline is not None and deadline > now + LONGEST:
        deadline = now + LONGEST
    if deadline is None and route.timeout is not None:
        deadline = now + route.timeout
    if deadline is not None and route.max_timeout is not None:
        deadline = min(deadline, now + route.max_timeout)
    request.deadline = deadline
    request.next_reminder_at = now + route.remind_every if route.remind_every else None
    steps = escalation_steps(route.escalate)
    request.next_escalation_at = now + steps[0].offset if steps else None


def next_instant(request: Request) -> datetime | None:
    """The earliest timer of an open request, or None when nothing is scheduled. A claimed
    step (`timer_steps`) counts at the end of its lease: then it is taken over."""
    if not request.is_open:
        return None
    instants = [t for t in (request.deadline, request.next_reminder_at, request.next_escalation_at,
                            request.step_due_at) if t]
    return min(instants) if instants else None


def next_reminder(created_at: datetime, every: timedelta, now: datetime) -> datetime:
    """The first reminder instant after `now` on the grid `created_at + k * every` (k ≥ 1):
    after downtime the missed grid instants are skipped, so one reminder stands for them."""
    k = int((now + EPSILON - created_at) / every) + 1
    return created_at + every * max(k, 1)


def instants_covered(first: datetime, every: timedelta, now: datetime) -> int:
    """How many grid instants `first, first + every, ...` are at or before `now`."""
    return max(0, int((now + EPSILON - first) / every) + 1)


@dataclass(frozen=True)
class EscalationDue:
    """What an escalation timer firing at `now` has to do."""

    new_levels: list[int]  # 1-based levels reached for the first time, in order
    repeat_level: int | None  # page this level's targets again (at most once per firing)
    next_at: datetime | None


def escalation_due(request: Request, route: Route, now: datetime) -> EscalationDue:
    """Steps due between the stored `next_escalation_at` and `now`: each new level once (none
    skipped), missed repeats collapsed into one, and the next step's instant."""
    steps = escalation_steps(route.escalate)
    start = request.next_escalation_at or request.created_at
    due = [s for s in steps if request.created_at + s.offset <= now + EPSILON
           and request.created_at + s.offset >= start - EPSILON]
    new_levels = sorted({s.level for s in due if s.level > request.escalation_level})
    reached = max([request.escalation_level, *new_levels])
    repeat_level = None
    if due and due[-1].repeat > 0 and due[-1].level == reached and due[-1].level not in new_levels:
        repeat_level = due[-1].level
    later = [request.created_at + s.offset for s in steps if request.created_at + s.offset > now + EPSILON]
    return EscalationDue(new_levels, repeat_level, later[0] if later else None)


def widened_responders(current: list[str], targets: list[str], replace: bool) -> list[str]:
    """Responders after an escalation to `targets`.

    An empty list means "anyone who can see the message" and stays empty when widening;
    with `replace` only the new targets' people may answer. A DM target written otherwise
    than its person's key (`slack:@U…`) also adds the key (`slack:U…`)."""
    people: list[str] = []
    for target in targets:
        people.append(target)
        person = target_person(target)
        if person is not None and person != target:
            people.append(person)
    if replace:
        base: list[str] = []
    elif not current:
        return []
    else:
        base = list(current)
    for entry in people:
        if entry not in base:
            base.append(entry)
    return base


def person_key(entry: str) -> str | None:
    """The responder key an entry names when it is one person, else None (a group, a
    channel, a Telegram group chat, or a form we cannot count)."""
    platform, sep, ident = entry.partition(":")
    if not sep or not ident:
        return None
    if platform in ("api", "cli"):
        return entry
    return target_person(entry)  # as the channel's spec reads it


def voters_of_entry(entry: str, people: People) -> set[str] | None:
    """The voters one responders/notify entry can bring, or None when a channel decides
    (a Slack user group, a channel, a Telegram group) or the entry is not in `people`."""
    if entry.startswith(("person:", "group:")):
        if not people.voters_named(entry):
            return None  # not defined here (checked where the people are known)
        return people.voters_named(entry)
    key = person_key(entry)
    return None if key is None else {people.voter_of(key)}


def max_possible_responders(route: Route, people: People) -> int | None:
    """The most distinct people who may ever answer on this route, or None when unbounded
    (no responders list, or an entry that names a group a channel resolves)."""
    if not route.responders:
        return None
    current: set[str] = set()
    most = 0
    for entries, replace in [(route.responders, True)] + [(lv.notify, lv.replace) for lv in route.escalate]:
        found = [voters_of_entry(e, people) for e in entries]
        if any(v is None for v in found):
            return None
        named = set().union(*found) if found else set()  # type: ignore[arg-type]
        current = named if replace else current | named
        most = max(most, len(current))
    return most
