"""The rules an open request is judged by: those it was created under, which a reload may
tighten but never loosen.

When a request is created, its route's settings (responders, quorum, four-eyes, timeout,
reminders, escalation) and the people and groups that decide who may answer are kept on
it (`Request.rules`). Until it closes:

- its route is that snapshot, whatever a reload does to the route of that name (renames
  it, removes it, changes its timeout, on_timeout or escalation levels, lowers its quorum,
  turns four-eyes off); except that a higher `quorum` or `forbid_self_approval: true` on
  the route of the same name applies at once (tightening), and so does its `remind_every`
  (a reminder decides neither who answers nor when the request ends);
- an answer is allowed only when the responders admit the person both as the snapshot
  resolved them and as the running config resolves them now: a handle or person added
  later is not admitted, a handle, person or group member removed later no longer is;
- votes count people as the snapshot knew them (one person's handles, one vote), and a
  handle it did not know as the running config knows it;
- the person who asked is the asker as the snapshot knew them and as the running config
  knows them now (both are refused).

Requests created before rules were kept (`rules` is None) are judged by the running config.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bridge.config_routes import Route
from bridge.models import Request, Responder, Rules
from bridge.people import LOCAL, People, canonical_handle
from bridge.router import Router


def snapshot(request: Request, route: Route, people: People) -> Rules:
    """The rules `request` is created under: `route` and the people its responders (with
    the route's escalation targets) and its asker name, as `people` resolves them now."""
    entries = [*request.responders, *(t for level in route.escalate for t in level.notify)]
    askers = asked_by(request)
    persons: set[str] = set()
    groups: dict[str, list[str]] = {}
    if route.quorum > 1 and not request.responders:  # anyone may vote: count people as they are now
        persons.update(people.people)
    for entry in [*entries, *askers]:
        if entry.startswith("group:"):
            group = people.group_named(entry)
            if group is not None:
                groups[group] = list(people.groups[group])
                persons.update(groups[group])
            continue
        if entry.startswith("oncall:"):  # whoever may be on call when it escalates
            rota = people.rotas.get(entry[len("oncall:"):].strip())
            persons.update((rota.named_people() or people.people) if rota is not None else ())
            continue
        voter = people.voter_of(entry)
        if voter.startswith("person:") and voter[len("person:"):] in people.people:
            persons.add(voter[len("person:"):])
    return Rules(route=route_as_json(route),
                 people={name: list(people.people[name]) for name in sorted(persons)},
                 groups=groups, asked_by=[people.voter_of(a) for a in askers])


def asked_by(request: Request) -> list[str]:
    """Who asked: the person or handle in `requested_by`, and the token that submitted it."""
    return [a for a in (request.requested_by, request.created_by) if a]


_DUMPS: dict[int, tuple[Route, dict[str, Any]]] = {}  # id(route) -> (route, its dump)
_DUMPS_KEPT = 256


def route_as_json(route: Route) -> dict[str, Any]:
    """`route` as JSON can hold it (what `Rules.route` keeps), made once per route object: the
    config's routes are built once per (re)load, and every request created under one keeps
    the same rules. The dump is shared by those requests' rules: nobody changes it (it is
    only read back into a `Route`)."""
    found = _DUMPS.get(id(route))
    if found is None or found[0] is not route:  # a new route (a reload), or an id reused
        if len(_DUMPS) >= _DUMPS_KEPT:
            _DUMPS.clear()
        found = _DUMPS[id(route)] = (route, _plain(route.model_dump()))
    return found[1]


def _plain(value: Any) -> Any:
    """A route dump as JSON can hold it, that `Route` reads back (durations as seconds)."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Judged:
    """The rules in force for one open request: its route, and who is who then and now."""

    route: Route
    then: People  # as the request was created
    now: People  # as the running config says
    asked: tuple[str, ...]  # voters who asked, as the snapshot knew them

    def admits(self, entry: str, responder: Responder) -> bool:
        """`entry` (of the request's responders) names `responder` under the creation rules
        and under the running config alike."""
        if canonical_handle(entry) == canonical_handle(responder.key):
            return True  # the very handle (of any platform, even one people: does not know)
        return self.then.admits(entry, responder) and self.now.admits(entry, responder)

    def voter(self, responder: Responder) -> str:
        """What quorum counts for `responder`: the person the snapshot knew the handle as,
        else the running config's reading."""
        voter = self.then.voter(responder)
        if voter.startswith("person:") or voter == LOCAL:
            return voter
        return self.now.voter(responder)

    def is_asker(self, responder: Responder, askers: list[str]) -> bool:
        """`responder` is who asked, as the snapshot knew them or as the config knows them now."""
        if self.then.voter(responder) in self.asked:
            return True
        voter = self.now.voter(responder)
        return any(voter == self.now.voter_of(asker) for asker in askers)


def route_in_force(request: Request, router: Router) -> Route:
    """The route `request` is judged by (see the module docstring)."""
    if request.rules is None:
        return router.get(request.route)
    kept = Route.model_validate(request.rules.route)
    current = router.named(kept.name)
    if current is None:
        return kept
    applied: dict[str, Any] = {"remind_every": current.remind_every}  # reminders decide nothing: current
    if current.quorum > kept.quorum:
        applied["quorum"] = current.quorum  # tighter
    if current.forbid_self_approval and not kept.forbid_self_approval:
        applied["forbid_self_approval"] = True  # tighter
    return kept.model_copy(update=applied)


def judge(request: Request, router: Router, people: People) -> Judged:
    """The rules in force for `request` with the running `router` and `people`."""
    rules = request.rules
    if rules is None:
        return Judged(router.get(request.route), people, people,
                      tuple(people.voter_of(a) for a in asked_by(request)))
    then = People(rules.people, rules.groups)
    return Judged(route_in_force(request, router), then, people, tuple(rules.asked_by))
