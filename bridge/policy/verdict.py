"""The verdict step (DESIGN §9): before a new request is posted, the rules of `policies:` and
then the standing approvals in the store say `allow`, `deny` or `ask`.

`allow` and `deny` are recorded as an ordinary answer through the answer path, by
`policy:<rule>` or `grant:<id>` (its checks apply: bridge.answering.automatic), with the
approval's first confirm question yes or no and a deny's reason as the answer's reason.
Anything in doubt asks a person, and says why on the request's record: a required question
an automatic answer cannot fill, a check that refuses it, an error while evaluating."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from bridge.answering.actor import Actor, ActorKind
from bridge.answering.desk import Desk
from bridge.answering.pipeline import answer_open
from bridge.config_routes import Route
from bridge.errors import AutomaticRefused, BridgeError
from bridge.models import Request
from bridge.policy.choice import is_tool_approval
from bridge.policy.claude import RuleSyntaxError, parse_rule
from bridge.policy.rules import Effect, PolicyRule
from bridge.policy.ruleset import RuleSet, RuleVerdict
from bridge.questions import QuestionKind
from bridge.store.concerns.grants import Grant

log = logging.getLogger("hitl_bridge.policy")


class PolicyDesk(Desk, Protocol):
    """The bridge as the verdict step sees it."""

    policies: RuleSet

    def route_of(self, request: Request) -> Route: ...


@dataclass(frozen=True)
class Verdict:
    """What decides `request`: a rule, a grant, or nobody (ask a person)."""

    effect: Effect
    rule: PolicyRule | None = None
    grant: Grant | None = None
    #: a matching rule says `grants: true`: a grant decides even where the route keeps grants out
    grants_override: bool = False

    @property
    def by(self) -> str:
        if self.grant is not None:
            return self.grant.answered_by
        return self.rule.answered_by if self.rule is not None else "-"


ASK = Verdict(Effect.ask)


def automatic_values(request: Request, approve: bool) -> dict[str, Any] | None:
    """The answer a rule or a grant gives: the first confirm question yes or no; None when a
    required question is left that it cannot fill (a person is asked)."""
    first = next((q for q in request.questions if q.kind is QuestionKind.confirm), None)
    if first is None:
        return None
    if any(q.required and q.id != first.id for q in request.questions):
        return None
    return {first.id: approve}


def grants_may_decide(request: Request, route: Route, rules: RuleVerdict) -> bool:
    """Whether a standing approval may decide `request` at all (before reading the store)."""
    if rules.grants is False or not request.tool or not is_tool_approval(request) or request.secret_question_ids:
        return False
    if rules.grants:
        return True
    return route.quorum == 1 and not route.forbid_self_approval and getattr(route, "grants", True)


def grant_matches(grant: Grant, request: Request) -> bool:
    """The grant covers this call: same tool, source and route (the store read those), its
    session for a session grant, and its pattern read as an `allow` would (fail closed)."""
    if grant.tool != request.tool or grant.source != request.source or grant.route != request.route:
        return False
    if grant.scope == "session" and (not request.session or grant.session != request.session):
        return False
    try:
        rule = parse_rule(grant.pattern)
    except RuleSyntaxError:
        return False
    return rule.matches(request.tool or "", request.context, request.workspace, deny=False)


async def verdict(desk: PolicyDesk, request: Request) -> Verdict:
    """Rules first (deny beats allow beats ask), then a standing approval in force now."""
    rules = desk.policies.evaluate(request)
    if rules.decides:
        assert rules.rule is not None
        return Verdict(rules.effect or Effect.ask, rules.rule)
    route = desk.route_of(request)
    if grants_may_decide(request, route, rules):
        now = desk.clock.now()
        for grant in await desk.store.grants_for(request.tool or "", request.source, request.route, now):
            if grant.active(now) and grant_matches(grant, request):
                return Verdict(Effect.allow, rules.rule, grant, rules.grants is True)
    return Verdict(Effect.ask, rules.rule)


def actor_for(found: Verdict) -> Actor:
    if found.grant is not None:
        grant = found.grant
        return Actor.automatic(ActorKind.grant, grant.id, grant=grant.id, effect="allow", scope=grant.scope,
                               pattern=grant.pattern, granted_by=grant.granted_by,
                               grantor=grant.grantor.model_dump(), grantor_via=grant.via,
                               override=found.grants_override)
    assert found.rule is not None
    rule = found.rule
    return Actor.automatic(ActorKind.policy, rule.name, rule=rule.name, effect=found.effect.value,
                           override=rule.override_route)


async def decide(desk: PolicyDesk, request: Request) -> Request | None:
    """Apply the verdict to the new `request`: the request as answered by a rule or a grant,
    or None when a person is to be asked (as it stands)."""
    try:
        found = await verdict(desk, request)
    except Exception as exc:  # a bug or a store fault while deciding: a person decides
        log.exception("request %s: evaluating policies failed; asking a person", request.id)
        desk.lifecycle.auto_decided(request, "error", "-")
        await _note(desk, request, "policy_error", {"error": f"{type(exc).__name__}: {str(exc)[:300]}"})
        return None
    if found.effect is Effect.ask:
        if found.rule is not None:
            desk.lifecycle.auto_decided(request, "ask", found.rule.name)
        return None
    approve = found.effect is Effect.allow
    label = found.rule.name if found.grant is None and found.rule is not None else "grant"
    values = automatic_values(request, approve)
    if values is None:
        desk.lifecycle.auto_decided(request, "ask", label)
        await _note(desk, request, "policy_skipped", {"by": found.by, "effect": found.effect.value,
                                                      "why": "a required question no rule can answer"})
        return None
    reason = None
    if not approve and found.rule is not None:
        reason = found.rule.reason or f"denied by rule {found.rule.name} of the bridge's policies"
    actor = actor_for(found)
    try:
        decided = await answer_open(desk, request, actor, values, reason=reason)
    except AutomaticRefused:  # on the record already (the answer path's refusal)
        desk.lifecycle.auto_decided(request, "ask", label)
        return None
    except BridgeError as exc:
        desk.lifecycle.auto_decided(request, "ask", label)
        await _note(desk, request, "policy_skipped", {"by": found.by, "why": str(exc)[:300]})
        return None
    desk.lifecycle.auto_decided(decided, found.effect.value, label)
    return decided if not decided.is_open else None


async def _note(desk: PolicyDesk, request: Request, kind: str, data: dict[str, Any]) -> None:
    try:
        await desk.note(request.id, kind, "policy", data)
    except Exception:
        log.exception("request %s: could not record %s", request.id, kind)
