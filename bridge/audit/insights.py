"""Decision insights: per route and per person, how long deciding takes (median, p90) and how
requests end (approved, rejected, answered, expired, decided automatically).

Every outcome counts, from the decision as it was recorded when it was made (the stored
answer: who, through which channel, when), not only approvals whose run resumed: an
expired request counts with the time it waited, a rejection with the time it took. A
decision by a rule or a standing grant (`policy:` / `grant:` responders) counts as
*automatic*. The inbox's insights page reads the newest closed requests the store keeps
(retention bounds it); `/metrics` counts every decision as it happens
(`hitl_decisions_total`, `hitl_time_to_decide_seconds`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from bridge.models import Request, RequestState
from bridge.outcome import OutcomeKind, outcome_of
from bridge.store.base import Store
from bridge.store.query import RequestQuery

#: responders that are not people: a decision by one of them is automatic
AUTOMATIC_PLATFORMS = frozenset({"policy", "grant"})
DECIDED_STATES = (RequestState.answered, RequestState.expired, RequestState.delivered, RequestState.failed)
#: the insights page reads at most this many of the newest decisions
WINDOW = 5000
PAGE = 500


class Verdict(StrEnum):
    approved = "approved"
    rejected = "rejected"
    answered = "answered"  # a person answered a question that is not a yes/no
    expired = "expired"  # nobody decided in time (the route's timeout rule may have said something)
    automatic = "automatic"  # a rule or a grant decided


@dataclass(frozen=True)
class Decision:
    request_id: str
    route: str
    #: the person (config `people:` name) or the verified handle; "" when nobody decided
    who: str
    verdict: Verdict
    seconds: float
    at: datetime


def decision_of(request: Request) -> Decision | None:
    """How `request` was decided (None while open, or when it was cancelled undecided)."""
    if request.state not in DECIDED_STATES:
        return None
    answer = request.answer
    outcome = outcome_of(request)
    if outcome is None:
        return None
    if answer is not None and answer.responder.platform in AUTOMATIC_PLATFORMS:
        verdict = Verdict.automatic
    elif outcome.kind in (OutcomeKind.expired, OutcomeKind.expired_with_default):
        verdict = Verdict.expired
    elif outcome.kind in (OutcomeKind.approved, OutcomeKind.rejected, OutcomeKind.answered):
        verdict = Verdict(outcome.kind.value)
    else:
        return None
    at = answer.answered_at if answer is not None else request.updated_at
    who = "" if answer is None or verdict is Verdict.expired else (answer.responder.person or answer.responder.key)
    return Decision(request.id, request.route, who, verdict, max(0.0, (at - request.created_at).total_seconds()), at)


@dataclass
class Tally:
    """Counts by verdict and the times to decide of one route, one person, or all."""

    counts: dict[Verdict, int] = field(default_factory=lambda: dict.fromkeys(Verdict, 0))
    seconds: list[float] = field(default_factory=list)

    def add(self, decision: Decision) -> None:
        self.counts[decision.verdict] += 1
        self.seconds.append(decision.seconds)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def median(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def p90(self) -> float | None:
        """The 90th percentile, nearest rank (a time some decision actually took)."""
        if not self.seconds:
            return None
        ordered = sorted(self.seconds)
        return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]

    def as_dict(self) -> dict[str, object]:
        return {"total": self.total, **{v.value: n for v, n in self.counts.items()},
                "median_seconds": self.median, "p90_seconds": self.p90}


@dataclass
class Insights:
    overall: Tally = field(default_factory=Tally)
    by_route: dict[str, Tally] = field(default_factory=dict)
    by_person: dict[str, Tally] = field(default_factory=dict)
    #: the window read: how many decisions, and whether older ones were left out
    decisions: int = 0
    truncated: bool = False

    def as_dict(self) -> dict[str, object]:
        return {"overall": self.overall.as_dict(), "decisions": self.decisions, "truncated": self.truncated,
                "by_route": {k: t.as_dict() for k, t in sorted(self.by_route.items())},
                "by_person": {k: t.as_dict() for k, t in sorted(self.by_person.items())}}


def summarize(decisions: Iterable[Decision]) -> Insights:
    found = Insights()
    for decision in decisions:
        found.decisions += 1
        found.overall.add(decision)
        found.by_route.setdefault(decision.route, Tally()).add(decision)
        if decision.who:
            found.by_person.setdefault(decision.who, Tally()).add(decision)
    return found


async def gather(store: Store, *, window: int = WINDOW) -> Insights:
    """Insights over the newest `window` decided requests the store keeps."""
    decisions: list[Decision] = []
    query = RequestQuery(states=DECIDED_STATES)
    offset = 0
    truncated = False
    while True:
        page = await store.find_requests(query, limit=PAGE, offset=offset)
        decisions += [d for d in map(decision_of, page) if d is not None]
        offset += len(page)
        if len(page) < PAGE:
            break
        if offset >= window:
            truncated = True
            break
    found = summarize(decisions)
    found.truncated = truncated
    return found
