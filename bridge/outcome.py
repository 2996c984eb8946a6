"""How a closed request ended, worded once: a pure summary of a request (its state, its
answer, its questions) as a small typed `Outcome`, and the one English sentence for it.

Every surface (Slack, Telegram, email, the inbox, MCP, the API's refusals) words a closed
request from here and only formats it (emoji, markup, a mention for the person, its own
clock): "Rejected by ana" reads the same everywhere. Nothing here returns a secret: values
go through `Request.redacted_answer()` and a secret answer is only said to be provided.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from bridge.errors import AlreadyClosed
from bridge.models import Answer, GrantMade, Request, RequestState
from bridge.policy.pressed import granted_words
from bridge.questions import Question, QuestionKind

TIMEOUT_VIA = "timeout"
#: the platforms of automatic answers (bridge.policy): a config rule, a stored grant
AUTOMATIC = {"policy": "rule", "grant": "grant"}


class OutcomeKind(StrEnum):
    approved = "approved"
    rejected = "rejected"
    answered = "answered"
    expired = "expired"  # nobody answered
    expired_with_default = "expired-with-default"  # the route's on_timeout rule answered
    cancelled = "cancelled"
    failed = "failed"


@dataclass(frozen=True)
class Outcome:
    """How one request ended. `who`: the display name of the person who answered ("" when
    nobody did); `at`: when it was answered (else when it closed); `reason`: the person's
    reason, or the error of a cancel or a failure; `default`: what the timeout rule said
    (approved, rejected or answered) for `expired_with_default`; `choice`: the option picked
    on a lone choice question; `secret`: the answer is a lone secret; `tally`: the votes
    line of a quorum route, when the caller has it; `grant`: the standing approval made
    with the answer; `automatic`: what decided without a person ("rule reads", "grant g1")."""

    kind: OutcomeKind
    who: str = ""
    via: str = ""
    at: datetime | None = None
    reason: str = ""
    default: OutcomeKind | None = None
    choice: str | None = None
    secret: bool = False
    tally: str = ""
    grant: GrantMade | None = None
    automatic: str = ""

    @property
    def answered(self) -> bool:
        """A person's answer is recorded (not the timeout rule's, not none)."""
        return self.kind in (OutcomeKind.approved, OutcomeKind.rejected, OutcomeKind.answered)

    def words(self, who: str | None = None, choice: str | None = None) -> str:
        """The sentence without time or reason, with `who` and `choice` as the surface shows
        them (a mention, escaped, bold): "Rejected by ana", "“blue” chosen by ana"."""
        by = self.who if who is None else who
        if self.automatic and self.kind in (OutcomeKind.approved, OutcomeKind.rejected):
            return f"{self.kind.value.capitalize()} automatically by {self.automatic}"
        if self.kind is OutcomeKind.approved and self.grant is not None:
            return f"{granted_words(self.grant.scope, self.grant.span_s)} by {by}"
        if self.kind is OutcomeKind.approved:
            return f"Approved by {by}"
        if self.kind is OutcomeKind.rejected:
            return f"Rejected by {by}"
        if self.kind is OutcomeKind.answered:
            if self.secret:
                return f"Secret provided by {by}"
            if self.choice is not None:
                shown = f"“{self.choice}”" if choice is None else choice
                return f"{shown} chosen by {by}"
            return f"Answered by {by}"
        if self.kind is OutcomeKind.expired_with_default:
            return f"Expired: {self.default or OutcomeKind.answered} by the timeout rule"
        if self.kind is OutcomeKind.expired:
            return "Expired without an answer"
        return "Cancelled" if self.kind is OutcomeKind.cancelled else "Failed"

    @property
    def headline(self) -> str:
        """The canonical words: "Rejected by ana"."""
        return self.words()

    @property
    def sentence(self) -> str:
        """The whole canonical sentence: "Rejected by ana at 2026-05-01 14:02 UTC: too risky"."""
        at = f" at {stamp(self.at)}" if self.at else ""
        reason = f": {self.reason}" if self.reason else ""
        return f"{self.headline}{at}{reason}."


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC")


def _said(questions: Sequence[Question], values: dict[str, Any]) -> OutcomeKind:
    """Rejected when a confirmation says no, approved when every question is a confirmation
    and says yes, else answered."""
    confirms = [str(values.get(q.id)) for q in questions if q.kind is QuestionKind.confirm and q.id in values]
    if "no" in confirms:
        return OutcomeKind.rejected
    if confirms and len(confirms) == len(questions):
        return OutcomeKind.approved
    return OutcomeKind.answered


def outcome_of(request: Request, tally: str = "") -> Outcome | None:
    """How `request` ended; None while it is open."""
    if request.is_open:
        return None
    return ending(request.state, request.answer, request.questions, request.redacted_answer() or {},
                  error=request.error, closed_at=request.updated_at, tally=tally)


def ending(state: RequestState, answer: Answer | None, questions: Sequence[Question], values: dict[str, Any], *,
           error: str | None = None, closed_at: datetime | None = None, tally: str = "") -> Outcome:
    """How a closed request ended, from its parts (`values`: the answer's, secrets already
    redacted); for a surface that holds the API's view of a request rather than the model."""
    if answer is None:
        kind = {RequestState.cancelled: OutcomeKind.cancelled,
                RequestState.failed: OutcomeKind.failed}.get(state, OutcomeKind.expired)
        return Outcome(kind, at=closed_at, reason=error or "", tally=tally)
    said = _said(questions, values)
    if answer.via == TIMEOUT_VIA:
        return Outcome(OutcomeKind.expired_with_default, via=answer.via, at=answer.answered_at, default=said,
                       tally=tally)
    lone = questions[0] if len(questions) == 1 else None
    choice = None
    if said is OutcomeKind.answered and lone is not None and lone.kind is QuestionKind.choice:
        choice = str(values.get(lone.id, ""))
    secret = said is OutcomeKind.answered and lone is not None and lone.kind is QuestionKind.secret
    automatic = AUTOMATIC.get(answer.responder.platform, "")
    return Outcome(said, answer.responder.display, answer.via, answer.answered_at, answer.reason or "",
                   choice=choice, secret=secret, tally=tally, grant=answer.grant,
                   automatic=f"{automatic} {answer.responder.user_id}" if automatic else "")


def closed_state(state: str, via: str | None) -> str:
    """How a closed state reads to a person: a delivery is not news to them, so delivered and
    a failed delivery of an answer read as answered (or expired, for the timeout rule's)."""
    if via is not None and state in (RequestState.delivered, RequestState.failed):
        return "expired" if via == TIMEOUT_VIA else "answered"
    return state


def closed_error(request: Request) -> AlreadyClosed:
    """The refusal for answering a closed request, in the same words on every surface:
    "already answered by ana at …"."""
    answer = request.answer
    return AlreadyClosed(request.id, closed_state(request.state.value, answer.via if answer else None),
                         answer.responder.display if answer else None, answer.answered_at if answer else None)
