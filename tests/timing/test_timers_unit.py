"""The pure timer arithmetic (bridge.timers) and the scheduler's index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bridge.config import EscalationLevel, Route
from bridge.models import Question, QuestionKind, Request, RequestState
from bridge.people import People
from bridge.scheduler import TimerIndex
from bridge.timers import (
    escalation_due,
    escalation_steps,
    initial_timers,
    max_possible_responders,
    next_instant,
    next_reminder,
    person_key,
    widened_responders,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
M = timedelta(minutes=1)


def level(after: int, *notify: str, repeat: int = 0, replace: bool = False) -> EscalationLevel:
    return EscalationLevel(after=timedelta(minutes=after), notify=list(notify), repeat=repeat, replace=replace)


def request(**fields: object) -> Request:
    base: dict[str, object] = {"id": "r_1", "title": "t", "created_at": T0, "updated_at": T0,
                               "questions": [Question(id="ok", kind=QuestionKind.confirm, prompt="p")]}
    return Request.model_validate({**base, **fields})


def test_steps_without_repeat_are_the_afters() -> None:
    steps = escalation_steps([level(15, "a"), level(45, "b")])
    assert [(s.offset / M, s.level, s.repeat) for s in steps] == [(15, 1, 0), (45, 2, 0)]


def test_repeat_uses_the_gap_and_shifts_later_levels() -> None:
    steps = escalation_steps([level(10, "a", repeat=2), level(25, "b", repeat=1), level(30, "c")])
    assert [(s.offset / M, s.level, s.repeat) for s in steps] == [
        (10, 1, 0), (20, 1, 1), (30, 1, 2), (45, 2, 0), (60, 2, 1), (65, 3, 0)]


def test_initial_timers_and_overrides() -> None:
    route = Route.model_validate({"name": "r", "remind_every": "10m", "escalate": [level(15, "a")],
                                  "timeout": "2h", "max_timeout": "3h"})
    r = request()
    initial_timers(r, route, T0)
    assert (r.deadline, r.next_reminder_at, r.next_escalation_at) == (T0 + 120 * M, T0 + 10 * M, T0 + 15 * M)
    r = request(timeout_s=30)
    initial_timers(r, route, T0)
    assert r.deadline == T0 + timedelta(seconds=30)
    r = request(deadline=T0 + timedelta(days=2))
    initial_timers(r, route, T0)
    assert r.deadline == T0 + 180 * M  # capped by max_timeout
    assert next_instant(r) == T0 + 10 * M
    r.state = RequestState.answered
    assert next_instant(r) is None


def test_next_reminder_stays_on_the_grid() -> None:
    every = 10 * M
    assert next_reminder(T0, every, T0 + 10 * M) == T0 + 20 * M
    assert next_reminder(T0, every, T0 + 10 * M - timedelta(microseconds=500)) == T0 + 20 * M  # within 1 ms
    assert next_reminder(T0, every, T0 + 47 * M) == T0 + 50 * M  # after downtime: skip, don't pile up


def test_escalation_due_collapses_missed_repeats_but_never_skips_a_level() -> None:
    route = Route(name="r", escalate=[level(10, "a", repeat=3), level(50, "b")])
    # steps: 10 (L1), 20, 30, 40 (repeats), 80 (L2, shifted by 3 * 10m)
    r = request(next_escalation_at=T0 + 10 * M)
    due = escalation_due(r, route, T0 + 35 * M)
    assert (due.new_levels, due.repeat_level, due.next_at) == ([1], None, T0 + 40 * M)
    r = request(next_escalation_at=T0 + 20 * M, escalation_level=1)
    due = escalation_due(r, route, T0 + 35 * M)
    assert (due.new_levels, due.repeat_level, due.next_at) == ([], 1, T0 + 40 * M)  # one page for 20m+30m
    r = request(next_escalation_at=T0 + 10 * M)
    due = escalation_due(r, route, T0 + 200 * M)
    assert (due.new_levels, due.repeat_level, due.next_at) == ([1, 2], None, None)


def test_widening_and_replacing_responders() -> None:
    assert widened_responders([], ["slack:@U0BOSS"], False) == []  # anyone stays anyone
    assert widened_responders(["slack:U0ANA"], ["slack:@U0BOSS", "telegram:7"], False) == [
        "slack:U0ANA", "slack:@U0BOSS", "slack:U0BOSS", "telegram:7"]
    assert widened_responders(["slack:U0ANA"], ["slack:#incidents"], True) == ["slack:#incidents"]
    assert widened_responders(["slack:U0ANA"], ["slack:U0ANA"], False) == ["slack:U0ANA"]


def test_who_counts_as_one_person() -> None:
    assert person_key("slack:@U0BOSS") == person_key("slack:U0BOSS") == "slack:U0BOSS"
    assert person_key("slack:@oncall") is None and person_key("slack:#deploys") is None
    assert person_key("telegram:42") == "telegram:42" and person_key("telegram:-1001") is None
    assert person_key("web") is None
    assert max_possible_responders(Route(name="r"), People()) is None
    assert max_possible_responders(Route(name="r", responders=["slack:U1A", "telegram:5"],
                                         escalate=[level(5, "slack:@U2B")]), People()) == 3
    ana_twice = People({"ana": ["slack:U1A", "telegram:5"], "bo": ["slack:U2B"]}, {"oncall": ["ana", "bo"]})
    assert max_possible_responders(Route(name="r", responders=["slack:U1A", "telegram:5"],
                                         escalate=[level(5, "slack:@U2B")]), ana_twice) == 2
    assert max_possible_responders(Route(name="r", responders=["group:oncall"]), ana_twice) == 2
    assert max_possible_responders(Route(name="r", responders=["group:oncall"]), People()) is None


def test_index_keeps_the_earliest_instant_per_request() -> None:
    index = TimerIndex()
    assert index.arm("a", T0 + 10 * M)
    assert not index.arm("a", T0 + 10 * M)  # unchanged
    index.arm("b", T0 + 5 * M)
    index.arm("a", T0 + 3 * M)  # re-armed earlier: the old entry goes stale
    index.arm("c", T0 + 7 * M)
    index.arm("c", None)  # dropped
    assert len(index) == 2
    assert index.next_at() == (T0 + 3 * M).timestamp()
    assert index.pop_due((T0 + 6 * M).timestamp()) == ["a", "b"]
    assert index.pop_due((T0 + 60 * M).timestamp()) == []  # stale entries of a and c never fire
    assert index.next_at() is None
