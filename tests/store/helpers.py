"""Builders for store tests: requests, answers and events with explicit times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bridge.models import Answer, Event, Question, QuestionKind, Request, RequestState, Responder, new_request_id

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """T0 plus `seconds`."""
    return T0 + timedelta(seconds=seconds)


def make_request(
    *,
    created: float = 0,
    source: str = "webhook",
    external_id: str | None = None,
    route: str = "default",
    state: RequestState = RequestState.pending,
    deadline: datetime | None = None,
    next_reminder_at: datetime | None = None,
    next_escalation_at: datetime | None = None,
    request_id: str | None = None,
    **extra: Any,
) -> Request:
    return Request(
        id=request_id or new_request_id(),
        title=extra.pop("title", "Deploy api to production?"),
        questions=[Question(id="ok", kind=QuestionKind.confirm, prompt="Deploy?")],
        source=source,
        external_id=external_id,
        route=route,
        state=state,
        deadline=deadline,
        next_reminder_at=next_reminder_at,
        next_escalation_at=next_escalation_at,
        created_at=at(created),
        updated_at=at(created),
        **extra,
    )


def make_answer(user: str = "U1", value: str = "yes", when: float = 60) -> Answer:
    return Answer(
        values={"ok": value}, responder=Responder(platform="slack", user_id=user, name=f"name-{user}"),
        via="slack", answered_at=at(when),
    )


def make_event(request_id: str, kind: str, when: float = 0, actor: str = "test", **data: Any) -> Event:
    return Event(id=0, request_id=request_id, at=at(when), kind=kind, actor=actor, data=data)
