"""Making a standing approval: a person approves a tool call and chooses "for this session",
"for 1 hour" or "always" (`GrantChoice`). The grant is checked before the answer is recorded
(a refused grant refuses the answer, with the reason: the person chooses again) and stored
once the approval is.

Only what the person could answer themselves, and only what the route offers
(`grant_offers`): an approval (not a rejection), a person or a token (not a rule, a grant or
the timeout), the request's own tool; `session` needs the request's session; `span` at most
the longest span the route offers; a pattern no wider than the offer's default."""

from __future__ import annotations

import secrets
from datetime import timedelta

from bridge.answering.desk import Attempt, Desk
from bridge.answering.values import is_rejection
from bridge.errors import GrantRefused
from bridge.models import Request, has_lone_surrogate
from bridge.policy.choice import GrantChoice, GrantScope, grant_offers
from bridge.policy.patterns_default import bare, default_pattern, narrow_enough
from bridge.store.concerns.grants import Grant


def new_grant_id() -> str:
    return "g_" + secrets.token_hex(8)


def plan_grant(desk: Desk, attempt: Attempt, choice: GrantChoice) -> Grant | None:
    """The grant `choice` asks for with this answer (None for `once`); GrantRefused otherwise."""
    if choice.scope is GrantScope.once:
        return None
    request, actor, route = attempt.request, attempt.actor, attempt.rules.route
    if actor.is_timeout or actor.is_automatic:
        raise GrantRefused("only a person (or a token) can grant a standing approval")
    if is_rejection(request, attempt.clean):
        raise GrantRefused("a standing approval goes with an approval: approve the call to grant it")
    offers = grant_offers(request, route)
    if not offers:
        raise GrantRefused(f"route {route.name!r} offers no standing approvals for this request (a quorum, "
                           "four eyes, a secret question, grants: false, or not a tool approval): approve "
                           "this call only")
    offered = {o.choice.scope for o in offers}
    if choice.scope not in offered:
        why = " (the request names no session)" if choice.scope is GrantScope.session else ""
        raise GrantRefused(f"{choice.scope.value!r} is not offered for this request{why}; offered: "
                           f"{', '.join(sorted(s.value for s in offered))}")
    now = desk.clock.now()
    expires = None
    if choice.scope is GrantScope.span:
        longest = max((o.choice.span_s or 0.0) for o in offers if o.choice.scope is GrantScope.span)
        if choice.span_s is None or choice.span_s > longest:
            raise GrantRefused(f"span_s must be given and at most {int(longest)} seconds (the longest span "
                               "this route offers)")
        expires = now + timedelta(seconds=choice.span_s)
    default = default_pattern(request) if choice.scope is GrantScope.always else bare(request)
    pattern = (choice.pattern or "").strip() or default
    if has_lone_surrogate(pattern) or any(ord(c) < 32 for c in pattern):
        raise GrantRefused("pattern refused: it holds control characters or text that is not valid Unicode")
    wider = narrow_enough(pattern, default, request)
    if wider is not None:
        raise GrantRefused(f"pattern refused: {wider}")
    responder = actor.responder
    return Grant(id=new_grant_id(), scope=choice.scope.value, pattern=pattern, tool=request.tool or "",
                 source=request.source, session=request.session if choice.scope is GrantScope.session else None,
                 route=request.route, granted_by=responder.key, grantor=responder, via=actor.via,
                 request_id=request.id, created_at=now, expires_at=expires)


async def keep_grant(desk: Desk, grant: Grant, request: Request) -> None:
    """Store the grant and put it on the request's record."""
    await desk.store.add_grant(grant)
    await desk.note(request.id, "granted", grant.granted_by, {
        "grant": grant.id, "scope": grant.scope, "pattern": grant.pattern, "via": grant.via,
        "expires_at": grant.expires_at.isoformat() if grant.expires_at else None})

