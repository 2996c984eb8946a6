"""What the scheduler arms: every open request's earliest timer."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bridge.models import Request


@dataclass(frozen=True)
class TimerRow:
    """An open request's earliest timer as the store keeps it (`requests.next_at`): all the
    scheduler needs to arm it. `resume`: a restart must look at the request whole (an
    escalation level reached or a timer step claimed)."""

    request_id: str
    at: datetime
    resume: bool


class TimerStore(Protocol):
    @abc.abstractmethod
    async def list_timed(self) -> list[Request]:
        """Open requests with a deadline, a reminder, an escalation or a claimed step due
        (for the scheduler)."""

    @abc.abstractmethod
    async def timer_rows(self, *, after: tuple[datetime, str] | None = None, limit: int = 5000) -> list[TimerRow]:
        """One page of every open request's earliest timer, in (instant, id) order after
        `after` (a keyset cursor: the last row of the previous page). From an index: no
        request body is read."""

    @abc.abstractmethod
    async def timers_due(self, before: datetime) -> list[tuple[str, datetime]]:
        """(id, earliest timer instant) of open requests with a timer at or before `before`
        (replicas re-read these to pick up requests another replica took in)."""
