"""Quorum: a route with `quorum: N` closes once N different people gave the same answer
(`people:` joins one person's handles); one rejection closes it at once."""

from __future__ import annotations

import json

from bridge.answering.desk import Attempt, Desk
from bridge.answering.values import is_rejection, redacted
from bridge.store.base import Vote


def counts_votes(attempt: Attempt) -> bool:
    """The answer is one vote among several (not the deadline's answer, nor an automatic one
    the route let in: bridge.answering.automatic)."""
    return attempt.rules.route.quorum > 1 and not attempt.actor.is_timeout and not attempt.actor.is_automatic


async def vote(desk: Desk, attempt: Attempt) -> bool:
    """Record one vote per person; True when it decides the request (quorum met, or a
    rejection), False while the request stays open for more votes."""
    request, responder, clean = attempt.request, attempt.actor.responder, attempt.clean
    rejection = is_rejection(request, clean)
    value = json.dumps(redacted(request, clean), sort_keys=True)
    voter = attempt.rules.voter(responder)
    first = await desk.store.add_vote(Vote(request.id, voter, value, desk.people.display(responder), desk.clock.now()))
    desk.lifecycle.voted(request, responder, attempt.actor.via, first)
    await desk.note(request.id, "vote" if first else "duplicate_vote", responder.key,
                    {"name": responder.name, "via": attempt.actor.via, "voter": voter,
                     "value": redacted(request, clean),
                     **({"relayed_by": responder.relayed_by} if responder.relayed_by else {})})
    if rejection and first:
        return True
    votes = await desk.store.list_votes(request.id)
    same = [v for v in votes if v.value == value]
    return len(same) >= attempt.rules.route.quorum and not rejection
