"""Standing in: a delegate answers for a person away (bridge.delegation) and is recorded as
themselves "for" them (`Responder.on_behalf_of`); quorum still counts the delegate once."""

from __future__ import annotations

from bridge.answering.desk import Attempt, Desk
from bridge.answering.identity import identified
from bridge.models import Request, Responder
from bridge.people import People, target_person


def _reached(people: People, target: str) -> set[str]:
    """The voters a notify target names (a person, a group, a handle of someone)."""
    voters = people.voters_named(target)
    if voters is not None:
        return voters
    handle = target_person(target)
    return {people.voter_of(handle)} if handle else set()


def names(desk: Desk, request: Request, responder: Responder) -> bool:
    """The request names `responder` itself: in its responders, or (none listed) its targets."""
    if request.responders:
        rules = desk.judged(request)
        return any(rules.admits(entry, responder) for entry in request.responders)
    voter = desk.people.voter(responder)
    return any(voter in _reached(desk.people, t) for t in request.targets)


def absent_named(desk: Desk, request: Request, responder: Responder) -> str | None:
    """The person away whom `responder` stands in for and whom the request names, if any."""
    person = identified(desk.people, responder).person
    for absent in desk.reach.stands_in_for(desk.people, person):
        if names(desk, request, Responder(platform="person", user_id=absent, name=absent)):
            return absent
    return None


async def standing_in(desk: Desk, attempt: Attempt) -> None:
    """From here on an answer the request asks of someone away, given by their delegate, is
    the delegate's "for" them."""
    responder = attempt.actor.responder
    if attempt.actor.is_timeout or responder.on_behalf_of or names(desk, attempt.request, responder):
        return
    await desk.reach.fresh(desk.people)  # windows set on another replica a moment ago count too
    absent = absent_named(desk, attempt.request, responder)
    if absent is not None:
        attempt.actor = attempt.actor.as_(responder.model_copy(update={"on_behalf_of": absent}))
