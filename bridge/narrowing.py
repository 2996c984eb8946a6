"""What a request body may ask of the route it lands on: less, never more.

The route (operator config) decides who may answer, how many must agree and what a deadline
does; a request body (an agent, an engine) may only narrow that: name some of the route's
responders, or ask for a later automatic answer. Anything that would widen it is refused
here, before the request is stored, with the offending entry named (HTTP 422)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from bridge.config_routes import Route
from bridge.errors import LoosensRoute
from bridge.models import RequestIn
from bridge.people import People
from bridge.questions import InvalidAnswer, Question, QuestionKind
from bridge.timers import LONGEST, max_possible_responders


def admitted_voters(entries: Sequence[str], people: People) -> set[str]:
    """The voters (`person:ana`, or a handle of nobody) the route's entries name by
    themselves; an entry only a channel resolves (a Slack channel or user group, a
    Telegram group) names nobody here: a body may repeat it exactly, nothing more."""
    voters: set[str] = set()
    for entry in entries:
        voters |= people.voters_named(entry.strip()) or set()
    return voters


def outside_route(asked: Sequence[str], route: Route, people: People) -> str | None:
    """The first body `responders` entry the route does not already allow, else None.

    Allowed: an entry the route lists, or one whose people (a person, a group's members, a
    handle's owner) the route's entries all admit. A route with no responders admits anyone."""
    if not route.responders:
        return None
    listed = {entry.strip() for entry in route.responders}
    voters = admitted_voters(route.responders, people)
    for entry in asked:
        if entry.strip() in listed:
            continue
        named = people.voters_named(entry.strip())
        if not named or not named <= voters:
            return entry
    return None


def check_narrows(request: RequestIn, route: Route, people: People, now: datetime) -> None:
    """Raise LoosensRoute when `request` asks for more than `route` allows."""
    where = f"route {route.name or 'default'!r}"
    offending = outside_route(request.responders, route, people)
    if offending is not None:
        raise LoosensRoute(
            "responders", f"{offending!r} is not among the responders of {where}: a request may "
                          "only name some of its route's responders, not others")
    if request.responders and route.responders and route.quorum > 1:
        most = max_possible_responders(route.model_copy(update={"responders": list(request.responders)}), people)
        if most is not None and most < route.quorum:
            raise LoosensRoute(
                "responders", f"these responders are {most} people, fewer than the quorum of "
                              f"{route.quorum} that {where} needs: the request could never be approved")
    automatic = route.on_timeout is not None and route.on_timeout.answer is not None \
        and not rejects(route.on_timeout.answer)
    if automatic and route.timeout is not None:
        asked = asked_deadline(request, now)
        if asked is not None and asked < now + route.timeout:
            field = "deadline" if request.deadline is not None else "timeout_s"
            raise LoosensRoute(
                field, f"earlier than the timeout of {where}, which answers by itself when it "
                       "passes (on_timeout.answer): a request may wait longer, not shorter")


def rejects(answer: Any) -> bool:
    """True when a route's `on_timeout.answer` is a rejection (`no`, false...): a request
    that reaches it sooner only fails sooner, which is tightening."""
    try:
        return Question(kind=QuestionKind.confirm, prompt="?").validate_answer(answer) == "no"
    except InvalidAnswer:
        return False


def asked_deadline(request: RequestIn, now: datetime) -> datetime | None:
    """The deadline the body itself asks for (`deadline`, else `timeout_s` from now)."""
    if request.deadline is not None:
        return request.deadline
    if request.timeout_s is not None:
        return now + timedelta(seconds=min(request.timeout_s, LONGEST.total_seconds()))
    return None
