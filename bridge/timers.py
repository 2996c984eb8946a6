"""Absolute instants for a request's deadline, first reminder and first escalation."""

from __future__ import annotations

from datetime import datetime, timedelta

from bridge.config import Route
from bridge.models import Request


def initial_timers(request: Request, route: Route, now: datetime) -> None:
    """Set deadline / next_reminder_at / next_escalation_at from the request and its route.

    The request's own `deadline` or `timeout_s` overrides the route's `timeout`, capped by
    the route's `max_timeout`."""
    deadline = request.deadline
    if deadline is None and request.timeout_s is not None:
        deadline = now + timedelta(seconds=request.timeout_s)
    if deadline is None and route.timeout is not None:
        deadline = now + route.timeout
    if deadline is not None and route.max_timeout is not None:
        deadline = min(deadline, now + route.max_timeout)
    request.deadline = deadline
    request.next_reminder_at = now + route.remind_every if route.remind_every else None
    request.next_escalation_at = now + route.escalate[0].after if route.escalate else None
