"""The answer path: the request must be open, then every check in CHECKS in order (each
raises a named bridge.errors refusal), then the vote is counted where a quorum applies,
then the answer is recorded. A new rule (a policy step, a grant) is one more check."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bridge.answering.actor import Actor
from bridge.answering.automatic import automatic_within_route
from bridge.answering.closed import closed_error, open_request
from bridge.answering.desk import Attempt, Desk
from bridge.answering.four_eyes import not_self_approval
from bridge.answering.identity import known_as_their_person
from bridge.answering.quorum import counts_votes, vote
from bridge.answering.record import record
from bridge.answering.responders import named_in_responders
from bridge.answering.shared_password import not_the_shared_password
from bridge.answering.standing_in import standing_in
from bridge.answering.values import fit_the_questions
from bridge.models import Request
from bridge.policy import GrantChoice
from bridge.policy.granting import keep_grant, plan_grant

#: a check raises a BridgeError to refuse the attempt; it may refine it (clean values, identity)
Check = Callable[[Desk, Attempt], Awaitable[None]]

CHECKS: tuple[Check, ...] = (
    named_in_responders,      # who may answer (NotAllowed)
    standing_in,              # a delegate answers "for" the person away
    fit_the_questions,        # validation (AnswerRejected)
    automatic_within_route,   # a rule's or a grant's approval where the route lets it (AutomaticRefused)
    not_self_approval,        # four eyes (SelfApproval)
    known_as_their_person,    # identity: a handle answers as its person
    not_the_shared_password,  # quorum routes count people (SharedVoter)
)


async def answer(desk: Desk, request_id: str, actor: Actor, values: dict[str, Any], *,
                 reason: str | None = None, checks: tuple[Check, ...] = CHECKS,
                 grant: GrantChoice | None = None, batch: str | None = None,
                 known: Request | None = None) -> Request:
    """Answer `request_id` as `actor`: the request closed with the answer, or (a vote short
    of its quorum) as it stands, still open. `grant`: the standing approval the person asks
    for with an approving answer (bridge.policy.granting: checked before the answer is
    recorded, GrantRefused refuses both; stored once it is). `batch`: the batch this answer
    is one item of (bridge.batches), kept on its record. `known`: the request as the caller
    has just read it (not read again; the store still decides atomically whether it is open)."""
    if known is not None and known.id == request_id:
        if not known.is_open:
            raise closed_error(known)
        request = known
    else:
        request = await open_request(desk.store, request_id)
    return await answer_open(desk, request, actor, values, reason=reason, checks=checks, grant=grant, batch=batch)


async def answer_open(desk: Desk, request: Request, actor: Actor, values: dict[str, Any], *,
                      reason: str | None = None, checks: tuple[Check, ...] = CHECKS,
                      grant: GrantChoice | None = None, batch: str | None = None) -> Request:
    """`answer` of a request the caller has just read open (the verdict step: the one it just
    created); the store still decides atomically whether it is open when the answer is recorded."""
    request_id = request.id
    attempt = Attempt(request, actor, values, desk.judged(request), reason, batch=batch)
    for check in checks:
        await check(desk, attempt)
    planned = plan_grant(desk, attempt, grant) if grant is not None else None  # GrantRefused: nothing recorded
    if counts_votes(attempt) and not await vote(desk, attempt):
        current = await desk.store.get_request(request_id)
        assert current is not None
        desk.changes.publish(current)
        desk.background(desk.update_channels(current), f"update {request_id}")
        return current
    recorded = await record(desk, attempt.request, attempt.actor, attempt.clean, reason=attempt.reason,
                            batch=attempt.batch, grant=planned)
    if planned is not None:
        await keep_grant(desk, planned, recorded)
    return recorded
