"""Four eyes: on a route with `forbid_self_approval`, who asked may not approve (rejecting
their own request stays allowed)."""

from __future__ import annotations

from bridge.answering.desk import Attempt, Desk, refuse
from bridge.answering.values import is_rejection
from bridge.errors import SelfApproval
from bridge.models import Request, Responder
from bridge.people import People
from bridge.rules import Judged, asked_by


def is_asker(people: People, rules: Judged, request: Request, responder: Responder) -> bool:
    """True when `responder` is the person the request names in `requested_by`, or the
    token that submitted it (as the request's rules knew them or as the config knows them
    now); or when the token relaying the answer for them is either."""
    askers = asked_by(request)
    if rules.is_asker(responder, askers):
        return True
    if responder.relayed_by:
        relay = people.voter_of(responder.relayed_by)
        return any(relay == people.voter_of(asker) for asker in askers)
    return False


async def not_self_approval(desk: Desk, attempt: Attempt) -> None:
    """Refuse (SelfApproval) an approval by whoever asked, where the route forbids it."""
    request, actor = attempt.request, attempt.actor
    if (attempt.rules.route.forbid_self_approval and not actor.is_timeout
            and is_asker(desk.people, attempt.rules, request, actor.responder)
            and not is_rejection(request, attempt.clean)):
        await refuse(desk, attempt, "self-approval", SelfApproval(desk.people.display(actor.responder)),
                     requested_by=request.requested_by)
