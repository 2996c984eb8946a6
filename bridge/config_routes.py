"""Routes: who is asked, who may answer, reminders, escalation levels and timeouts
(`routes:` and `default_route:` of the config)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from bridge.config_daemon import Duration, StrictModel
from bridge.people import People
from bridge.specs import default_targets


class EscalationLevel(StrictModel):
    after: Duration
    notify: list[str] = Field(min_length=1)
    replace: bool = False
    repeat: int = Field(default=0, ge=0, le=100)


class OnTimeout(StrictModel):
    answer: Any = None
    fail: bool = False
    keep_waiting: bool = False

    @model_validator(mode="after")
    def _exactly_one(self) -> OnTimeout:
        chosen = [self.answer is not None, self.fail, self.keep_waiting]
        if sum(chosen) != 1:
            raise ValueError("set exactly one of answer, fail: true, keep_waiting: true")
        return self


class Route(StrictModel):
    name: str | None = None
    match: dict[str, str | list[str]] = Field(default_factory=dict)
    notify: list[str] = Field(default_factory=default_targets)
    responders: list[str] = Field(default_factory=list)
    quorum: int = Field(default=1, ge=1, le=100)
    remind_every: Duration | None = None
    escalate: list[EscalationLevel] = Field(default_factory=list)
    timeout: Duration | None = None
    on_timeout: OnTimeout | None = None
    max_timeout: Duration | None = None
    #: refuse an approval from the person the request names in `requested_by`
    forbid_self_approval: bool = False
    #: standing approvals ("Allow for this session", "for 1 hour", "Always allow this") are
    #: offered and decide requests on this route (false: never, unless a rule says `grants: true`)
    grants: bool = True
    #: the spans offered as "Allow for …" (seconds or durations: 1h, 8h)
    grant_spans: list[Duration] = Field(default_factory=list, max_length=5)
    #: post a request a rule or a grant decided to the route's targets anyway, for their information
    fyi_automatic: bool = False

    @model_validator(mode="after")
    def _spans_fit(self) -> Route:
        where = f"route {self.name!r}: " if self.name else ""
        for span in self.grant_spans:
            if not 60 <= span.total_seconds() <= 366 * 86400:
                raise ValueError(f"{where}grant_spans: {span} is not between 1 minute and 366 days")
        return self

    @model_validator(mode="after")
    def _levels_in_order(self) -> Route:
        where = f"route {self.name!r}: " if self.name else ""
        for i in range(1, len(self.escalate)):
            if self.escalate[i].after <= self.escalate[i - 1].after:
                raise ValueError(f"{where}escalate[{i}].after must be later than escalate[{i - 1}].after "
                                 "(levels in increasing order)")
        return self

    def check_quorum(self, people: People) -> None:
        """Refuse a quorum larger than the people who could ever answer on this route."""
        from bridge.timers import max_possible_responders  # bridge.timers imports bridge.config_routes

        where = f"route {self.name!r}: " if self.name else ""
        most = max_possible_responders(self, people)
        if most is not None and self.quorum > most:
            raise ValueError(f"{where}quorum {self.quorum} is larger than the {most} people who may "
                             "answer (responders plus escalation targets)")

    @model_validator(mode="after")
    def _timing_is_possible(self) -> Route:
        where = f"route {self.name!r}: " if self.name else ""
        self.check_quorum(People())
        answer = self.on_timeout.answer if self.on_timeout else None
        if answer is not None and not _could_be_an_answer(answer):
            raise ValueError(f"{where}on_timeout.answer {answer!r} cannot answer any question "
                             "(use a non-empty string, a list of options, an object, or true/false)")
        if self.timeout and self.max_timeout and self.timeout > self.max_timeout:
            raise ValueError(f"{where}timeout is longer than max_timeout")
        return self


def _could_be_an_answer(value: Any) -> bool:
    """Valid for at least one question kind (checked per question when the deadline passes)."""
    if isinstance(value, bool):
        return True  # confirm
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list):
        return all(isinstance(v, str) and v for v in value)
    return isinstance(value, dict)
