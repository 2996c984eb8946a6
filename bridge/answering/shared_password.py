"""The shared inbox password is everyone's: it casts no vote where people are counted."""

from __future__ import annotations

from bridge.answering.desk import Attempt, Desk, refuse
from bridge.errors import SharedVoter
from bridge.people import shared_voters


async def not_the_shared_password(desk: Desk, attempt: Attempt) -> None:
    """Refuse (SharedVoter) the shared password's answer on a route that needs a quorum."""
    quorum = attempt.rules.route.quorum
    if quorum > 1 and not attempt.actor.is_timeout \
            and (voter := desk.people.voter(attempt.actor.responder)) in shared_voters():
        await refuse(desk, attempt, "shared password", SharedVoter(quorum, voter))
