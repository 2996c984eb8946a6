"""One INFO line per step of a request's life, and the listeners (metrics) that count them.

created → posted (where) → voted / answered (by whom, how) → delivered, or expired,
cancelled, escalated, reminded, failed. Every line names the request id and carries it as
a structured field (`request_id`, `event`, …: JSON log lines show them as keys). A failed
post or delivery is a WARNING with the platform's or engine's error; identical failures
(same target, same error) are held back by the RepeatLimiter and counted. No line holds
an answer's text or a secret: only the decision of choice questions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bridge.models import Request, Responder
from bridge.ports import Clock, PostResult
from bridge.questions import QuestionKind

log = logging.getLogger("hitl_bridge.requests")

DECISION_KINDS = frozenset({QuestionKind.confirm, QuestionKind.choice, QuestionKind.multi_choice})


@dataclass(frozen=True)
class Step:
    """One step: `kind` is created, posted, post_failed, voted, answered, expired, cancelled,
    delivered, delivery_retry, delivery_failed, escalated, reminded, timer, redelivery,
    auto_decided."""

    kind: str
    request: Request
    fields: dict[str, Any] = field(default_factory=dict)


Listener = Callable[[Step], None]


def duration(seconds: float) -> str:
    """12s, 4m05s, 2h10m."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def decision(request: Request) -> str:
    """What was decided, for the log: the values of choice questions only (never free
    text, never a secret)."""
    if request.answer is None:
        return ""
    shown = []
    for question in request.questions:
        if question.id in request.secret_question_ids or question.id not in request.answer.values:
            continue
        value = request.answer.values[question.id]
        if question.kind in DECISION_KINDS:
            shown.append(f"{question.id}={value if isinstance(value, str) else ','.join(map(str, value))}"[:80])
    return " ".join(shown)


class Lifecycle:
    """Logs each step and hands it to the listeners (a failing listener is logged, never raised)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.listeners: list[Listener] = []

    def _emit(self, kind: str, request: Request, level: int, message: str, *args: Any,
              limit_key: tuple[Any, ...] | None = None, **fields: Any) -> None:
        extra: dict[str, Any] = {"request_id": request.id, "event": kind, **fields}
        if limit_key is not None:
            extra["limit_key"] = limit_key
        log.log(level, message, *args, extra=extra)
        step = Step(kind, request, fields)
        for listener in self.listeners:
            try:
                listener(step)
            except Exception:
                log.exception("a listener of %s steps failed", kind)

    def _since_created(self, request: Request) -> float:
        return (self.clock.now() - request.created_at).total_seconds()

    # the steps ----------------------------------------------------------------------------
    def created(self, request: Request) -> None:
        self._emit("created", request, logging.INFO, "request %s created by %s: route %s → %s",
                   request.id, request.source, request.route, ", ".join(request.targets) or "(no targets)",
                   source=request.source, route=request.route, targets=list(request.targets))

    def posted(self, request: Request, results: Sequence[tuple[str, PostResult]]) -> None:
        """One line per copy: where it went, or the platform's error."""
        for channel, result in results:
            if result.ok:
                where = result.ref.get("channel") or result.ref.get("chat_id")
                self._emit("posted", request, logging.INFO, "request %s posted to %s%s", request.id, result.target,
                           f" ({where})" if where and str(where) not in result.target else "",
                           channel=channel, target=result.target, source=request.source)
            else:
                self._emit("post_failed", request, logging.WARNING, "request %s not posted to %s: %s",
                           request.id, result.target, result.error, limit_key=(result.target, result.error),
                           channel=channel, target=result.target, error=result.error, source=request.source)

    def voted(self, request: Request, responder: Responder, via: str, first: bool) -> None:
        self._emit("voted", request, logging.INFO, "request %s: %s by %s via %s", request.id,
                   "vote" if first else "repeated vote (not counted twice)", responder.key, via,
                   responder=responder.key, via=via)

    def answered(self, request: Request) -> None:
        answer = request.answer
        if answer is None:
            return
        waited = self._since_created(request)
        decided = decision(request)
        if answer.via == "timeout":
            self._emit("expired", request, logging.INFO, "request %s expired after %s: route %s answered%s",
                       request.id, duration(waited), request.route, f" {decided}" if decided else "",
                       route=request.route, source=request.source, via="timeout", seconds=waited)
            return
        named = answer.responder.name and answer.responder.name != answer.responder.user_id
        who = answer.responder.key + (f" ({answer.responder.name})" if named else "")
        self._emit("answered", request, logging.INFO, "request %s answered by %s via %s after %s%s",
                   request.id, who, answer.via, duration(waited), f": {decided}" if decided else "",
                   route=request.route, source=request.source, responder=answer.responder.key, via=answer.via,
                   seconds=waited)

    def auto_decided(self, request: Request, effect: str, rule: str) -> None:
        """The verdict step's outcome: `effect` allow or deny (answered by a rule or a grant:
        `rule` is the rule's name, or `grant`), ask (a matching rule asked, or an automatic
        answer was refused), error (evaluating failed: a person is asked)."""
        level = logging.WARNING if effect == "error" else logging.DEBUG
        self._emit("auto_decided", request, level, "request %s: policy verdict %s (%s)", request.id, effect, rule,
                   effect=effect, rule=rule, route=request.route)

    def closed(self, request: Request, kind: str, actor: str, reason: str) -> None:
        """Cancelled, withdrawn, or expired without an answer."""
        self._emit("cancelled" if kind in ("cancelled", "withdrawn") else "expired", request, logging.INFO,
                   "request %s %s by %s%s", request.id, kind, actor or "-", f": {reason}" if reason else "",
                   route=request.route, source=request.source, actor=actor, reason=reason)

    def delivered(self, request: Request, outcome: str, attempts: int) -> None:
        answered_at = request.answer.answered_at if request.answer else None
        after = (self.clock.now() - answered_at).total_seconds() if answered_at else None
        self._emit("delivered", request, logging.INFO, "request %s delivered to %s (%s, attempt %d%s)",
                   request.id, request.source, outcome, attempts,
                   f", {after * 1000:.0f} ms after the answer" if after is not None and after < 60 else
                   f", {duration(after)} after the answer" if after is not None else "",
                   source=request.source, outcome=outcome, attempts=attempts, seconds=after)

    def delivery_failed(self, request: Request, error: str, attempts: int, *, final: bool,
                        retry_in: float | None = None) -> None:
        if final:
            self._emit("delivery_failed", request, logging.WARNING,
                       "request %s: delivery to %s failed for good after %d attempt(s) (dead letter): %s",
                       request.id, request.source, attempts, error,  # each request's end: never held back
                       source=request.source, error=error, attempts=attempts)
        else:
            self._emit("delivery_retry", request, logging.WARNING,
                       "request %s: delivery to %s failed (attempt %d), retrying in %.1fs: %s",
                       request.id, request.source, attempts, retry_in or 0.0, error,
                       limit_key=(request.source, error, "retry"),
                       source=request.source, error=error, attempts=attempts)

    def escalated(self, request: Request, levels: Sequence[int], targets: Sequence[str]) -> None:
        self._emit("escalated", request, logging.INFO, "request %s escalated to level %s: posting to %s",
                   request.id, ",".join(map(str, levels)), ", ".join(targets) or "(no new targets)",
                   route=request.route, escalation_level=max(levels, default=0), targets=list(targets))

    def reminded(self, request: Request) -> None:
        self._emit("reminded", request, logging.INFO, "request %s: reminder %d sent to %s", request.id,
                   request.reminders_sent, ", ".join(request.targets), route=request.route)

    def timer(self, request: Request, kind: str) -> None:
        """A due timer (`deadline`, `reminder`, `escalation`) is applied; counted, not logged
        (the step it causes is)."""
        for listener in self.listeners:
            try:
                listener(Step("timer", request, {"timer": kind}))
            except Exception:
                log.exception("a listener of timer steps failed")

    def redelivery(self, request: Request, actor: str) -> None:
        self._emit("redelivery", request, logging.INFO, "request %s: delivery queued again by %s",
                   request.id, actor, actor=actor, source=request.source)
