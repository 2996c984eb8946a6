"""Who may answer: the request's `responders` (a handle, `person:`, `group:`, or a group a
channel resolves), or the delegate of a person they name who is away; actors the daemon
authenticated itself may answer any request."""

from __future__ import annotations

import logging

from bridge.answering.actor import Actor
from bridge.answering.desk import Attempt, Desk, refuse
from bridge.answering.standing_in import absent_named
from bridge.errors import NotAllowed
from bridge.models import Request
from bridge.ports import ResolvesGroups

log = logging.getLogger("hitl_bridge")


async def may_answer(desk: Desk, request: Request, actor: Actor) -> bool:
    """True when `actor` may answer `request` (BridgeAPI.is_allowed)."""
    if actor.trusted or not request.responders:
        return True
    responder = actor.responder
    rules = desk.judged(request)
    if any(rules.admits(entry, responder) for entry in request.responders):
        return True  # the handle, person:, group:, or another handle of the same person
    for entry in request.responders:
        channel = desk.channel_for(entry)
        if isinstance(channel, ResolvesGroups) and entry.startswith(responder.platform + ":"):
            try:
                if await channel.is_member(entry, responder):
                    return True
            except Exception:
                log.exception("resolving responders entry %s failed", entry)
    await desk.reach.fresh(desk.people)
    return absent_named(desk, request, responder) is not None  # a delegate of someone it names


async def named_in_responders(desk: Desk, attempt: Attempt) -> None:
    """Refuse (NotAllowed) an actor the request's responders do not name."""
    if not await may_answer(desk, attempt.request, attempt.actor):
        await refuse(desk, attempt, "not in responders", NotAllowed(attempt.actor.responder.display))
