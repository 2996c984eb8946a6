"""Outcomes waiting for their write-back to the source (the outbox)."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bridge.models import Answer, Event, Request


@dataclass(frozen=True)
class OutboxStats:
    """What /metrics shows of the outbox, counted by the database (not row by row)."""

    pending: int  # waiting or retrying
    dead: int  # gave up (dead letters)
    failing: dict[str, int]  # source -> entries still retrying after at least one failure


@dataclass(frozen=True)
class OutboxItem:
    id: int
    request_id: str
    state: str  # the outcome to deliver: answered | expired | cancelled
    attempts: int
    due_at: datetime
    created_at: datetime
    last_error: str | None
    dead: bool


class OutboxStore(Protocol):
    @abc.abstractmethod
    async def enqueue(self, request_id: str, state: str, due_at: datetime) -> int: ...

    @abc.abstractmethod
    async def claim_due(self, now: datetime, limit: int, lease_s: float) -> list[OutboxItem]:
        """Items due at `now`, not dead; each claimed item's due_at moves `lease_s` ahead
        so another worker (replica) does not take it at the same time."""

    @abc.abstractmethod
    async def outbox_done(self, item_id: int) -> None: ...

    @abc.abstractmethod
    async def finish_delivery(self, item_id: int, request_id: str, *, event: Event, now: datetime,
                              answer: Answer | None = None) -> Request | None:
        """The write-back of outbox entry `item_id` succeeded. In one transaction: mark the
        entry done, move the request from `answered`/`expired` to `delivered` when it has an
        answer (returning it; else None), append `event`, and store `answer` in place of the
        request's answer when given (a secret not kept after its delivery)."""

    @abc.abstractmethod
    async def heal_deliveries(self, now: datetime) -> list[str]:
        """Move to `delivered` every request left `answered`/`expired` (with an answer) whose
        write-back succeeded (a done outbox entry and none still pending) — what a crash
        between the two steps left behind before they were one transaction. Returns the ids."""

    @abc.abstractmethod
    async def outbox_stats(self) -> OutboxStats: ...

    @abc.abstractmethod
    async def outbox_retry(self, item_id: int, *, attempts: int, due_at: datetime, error: str) -> None: ...

    @abc.abstractmethod
    async def outbox_dead(self, item_id: int, *, error: str) -> None: ...

    @abc.abstractmethod
    async def list_outbox(self, *, dead: bool | None = None, request_id: str | None = None) -> list[OutboxItem]: ...

    @abc.abstractmethod
    async def next_outbox_due(self) -> datetime | None: ...
