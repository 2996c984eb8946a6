"""What a person may choose besides "Allow once" when they approve a tool call, and how a
channel offers it (the contract between the channels and the policy core).

A channel renders each `GrantOffer` of `grant_offers(request, route)` as one more approving
button (its `key` fits in any button payload: Slack `value`, Telegram `callback_data`, a
form field) and, when the person presses it, answers the request as approved and passes
`GrantOffer.parse_key(key)` (or a `GrantChoice` with a narrowed `pattern`) as `grant=` to
`BridgeAPI.answer`. The core checks that the person may grant it and records the grant."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from bridge.config_routes import Route
from bridge.models import QuestionKind, Request


class GrantScope(StrEnum):
    #: this call only (a plain approval: no grant is stored)
    once = "once"
    #: the same tool for the rest of the session the source knows (`Request.session`)
    session = "session"
    #: the same tool for `span_s` seconds ("Allow for 1 hour")
    span = "span"
    #: the tool with an argument pattern, until revoked ("Always allow this")
    always = "always"


class GrantChoice(BaseModel):
    """The standing approval a person asks for with an approving answer."""

    model_config = ConfigDict(extra="forbid")

    scope: GrantScope
    #: for `span`: how long it lasts
    span_s: float | None = Field(default=None, gt=0, le=366 * 86400, allow_inf_nan=False)
    #: for `always` (optionally `session`/`span`): the rule the grant matches, in the
    #: permission-rule syntax of `policies:` (`Bash(npm test:*)`, `Edit(./src/**)`,
    #: `mcp__server__tool`); None: the offer's default for this request
    pattern: str | None = Field(default=None, max_length=1000)


_KEY = re.compile(r"^(once|session|always|span:(\d{1,8}))$")


@dataclass(frozen=True)
class GrantOffer:
    """One choice a channel shows next to Approve."""

    choice: GrantChoice
    #: the button's words: "Allow for this session", "Allow for 1 hour", "Always allow this"
    label: str
    #: the pattern a person saving "Always allow this" starts from (they may narrow it)
    pattern: str | None = None

    @property
    def key(self) -> str:
        """Short and stable, for a button payload: `once`, `session`, `span:3600`, `always`."""
        if self.choice.scope is GrantScope.span:
            return f"span:{int(self.choice.span_s or 0)}"
        return self.choice.scope.value

    @staticmethod
    def parse_key(key: str, pattern: str | None = None) -> GrantChoice:
        """The choice a button payload names; ValueError for anything else."""
        found = _KEY.match(key.strip())
        if not found:
            raise ValueError(f"not a standing-approval choice: {key[:40]!r}")
        if found.group(2):
            return GrantChoice(scope=GrantScope.span, span_s=float(found.group(2)), pattern=pattern)
        return GrantChoice(scope=GrantScope(found.group(1)), pattern=pattern)


def _span_label(seconds: float) -> str:
    if seconds % 86400 == 0:
        n, unit = int(seconds // 86400), "day"
    elif seconds % 3600 == 0:
        n, unit = int(seconds // 3600), "hour"
    else:
        n, unit = max(1, int(seconds // 60)), "minute"
    return f"Allow for {n} {unit}{'' if n == 1 else 's'}"


def is_tool_approval(request: Request) -> bool:
    """A request about one tool call whose first question approves it (Approve / Reject)."""
    return bool(request.tool) and bool(request.questions) and request.questions[0].kind is QuestionKind.confirm


def grant_offers(request: Request, route: Route) -> list[GrantOffer]:
    """The standing approvals a channel offers for `request` (besides "Allow once"): none for
    a request that is not a tool approval, on a route with quorum, four-eyes or grants off,
    or with a secret question. "For this session" only when the request names its session;
    one "Allow for …" per span of the route's `grant_spans` (1 hour when it sets none);
    "Always allow this" starts from `default_pattern` (bridge.policy.patterns_default)."""
    from bridge.policy.patterns_default import default_pattern  # imports the rule syntax: kept off the contract

    if not is_tool_approval(request) or request.secret_question_ids:
        return []
    if route.quorum > 1 or route.forbid_self_approval or not getattr(route, "grants", True):
        return []
    offers: list[GrantOffer] = []
    if request.session:
        offers.append(GrantOffer(GrantChoice(scope=GrantScope.session), "Allow for this session"))
    spans = [s.total_seconds() for s in getattr(route, "grant_spans", [])] or [3600.0]
    for seconds in spans:
        offers.append(GrantOffer(GrantChoice(scope=GrantScope.span, span_s=seconds), _span_label(seconds)))
    offers.append(GrantOffer(GrantChoice(scope=GrantScope.always), "Always allow this",
                             pattern=default_pattern(request)))
    return offers
