"""Decisions without a person go through the same checks as a person's, and one more: a rule
or a standing approval approves only where the route lets automatic approvals in.

An automatic "no" is always allowed (a rejection is never held back). An automatic "yes" is
refused (`AutomaticRefused`: the request is then asked of a person) on a request with a
secret question, and — unless the rule says `override_route: true` (for a grant: a rule
with `grants: true`) — on a route with a quorum above 1. A grant is refused also on a route
with `forbid_self_approval` or `grants: false`, and wherever its grantor would not be
admitted to answer (the request's responders, the route's, as they are now). (A rule is no
one's own request: four eyes keep people from approving themselves, not the operator's rules.)"""

from __future__ import annotations

from bridge.answering.actor import Actor, ActorKind
from bridge.answering.desk import Attempt, Desk, refuse
from bridge.answering.four_eyes import is_asker
from bridge.answering.responders import may_answer
from bridge.answering.values import is_rejection
from bridge.errors import AutomaticRefused
from bridge.models import Responder


def route_keeps_out(attempt: Attempt) -> list[str]:
    """Why this route keeps an automatic approval of this request out (empty: it does not)."""
    request, actor, route = attempt.request, attempt.actor, attempt.rules.route
    why = []
    if request.secret_question_ids:
        why.append("a secret question is never answered automatically")
    override = bool(actor.detail.get("override"))
    if not override:
        if route.quorum > 1:
            why.append(f"route {route.name!r} needs a quorum of {route.quorum}")
        if actor.kind is ActorKind.grant and route.forbid_self_approval:
            why.append(f"route {route.name!r} forbids self-approval (four eyes)")
        if actor.kind is ActorKind.grant and not getattr(route, "grants", True):
            why.append(f"route {route.name!r} turns standing approvals off (grants: false)")
    return why


async def automatic_within_route(desk: Desk, attempt: Attempt) -> None:
    """Refuse (AutomaticRefused) an automatic approval the route or the grantor keeps out."""
    actor = attempt.actor
    if not actor.is_automatic or is_rejection(attempt.request, attempt.clean):
        return
    why = route_keeps_out(attempt)
    if actor.kind is ActorKind.grant and not why:
        why = await grantor_kept_out(desk, attempt)
    if why:
        await refuse(desk, attempt, "; ".join(why), AutomaticRefused(actor.responder.key, why))


async def grantor_kept_out(desk: Desk, attempt: Attempt) -> list[str]:
    """A grant decides only what its grantor could answer themselves, and never their own request
    where four eyes apply."""
    grantor = Responder.model_validate(attempt.actor.detail.get("grantor") or {})
    via = str(attempt.actor.detail.get("grantor_via") or "")
    if not grantor.platform or not via:
        return ["the grant does not say who granted it"]
    as_grantor = Actor.of(grantor, via)
    if not await may_answer(desk, attempt.request, as_grantor):
        return [f"its grantor {grantor.key} may not answer this request"]
    if attempt.rules.route.forbid_self_approval and is_asker(desk.people, attempt.rules, attempt.request, grantor):
        return [f"its grantor {grantor.key} asked for it (four eyes)"]
    return []
