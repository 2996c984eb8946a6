"""The store's write transactions, written once for both backends.

Each transaction is a generator: it yields the steps it needs (lock a request, save it,
append events, mark an outbox entry done...) and receives each step's result; it holds the
logic (lock → check → change → write → events). A backend supplies only the steps, as SQL
(`SQLiteSteps` in `bridge.store.sqlite_rows`, `PostgresSteps` in `bridge.store.pg_rows`), and
drives the generator inside one transaction of its own: SQLite synchronously in its connection thread (group-committed),
PostgreSQL awaiting asyncpg with the request row locked (SELECT … FOR UPDATE).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from bridge.models import Answer, Event, Request, RequestState
from bridge.store.base import Store, claim_holds
from bridge.store.codec import move

T = TypeVar("T")


class Step:
    """One thing a transaction asks of the backend: the backend method `name` runs it."""

    name: ClassVar[str]


@dataclass(frozen=True)
class OfRequest(Step):
    request_id: str


class Locked(OfRequest):
    """The request as stored, locked until the transaction ends (None: not found)."""

    name = "locked"


class StillStuck(OfRequest):
    """True while the request is still answered/expired with its write-back done (locking it)."""

    name = "still_stuck"


@dataclass(frozen=True)
class Save(Step):
    """Write the request's row, then append `events`, then (when `enqueue` is set) an outbox
    entry for that outcome, due at the request's `updated_at`."""

    name = "save"
    request: Request
    events: Sequence[Event] = ()
    enqueue: str | None = None


@dataclass(frozen=True)
class AddEvents(Step):
    name = "add_events"
    events: Sequence[Event]


@dataclass(frozen=True)
class OutboxDone(Step):
    name = "outbox_done"
    item_id: int


@dataclass(frozen=True)
class Prunable(Step):
    """The ids of up to `limit` closed requests last changed before `before` whose outcome needs
    nothing more (`RetentionStore.prune_closed`), locked (those another writer holds: skipped)."""

    name = "prunable"
    before: datetime
    limit: int


@dataclass(frozen=True)
class Forget(Step):
    """Delete these requests (ids as `Prunable` gave them) and what belongs to them (`PARTS`)."""

    name = "forget"
    request_ids: Sequence[str]


@dataclass(frozen=True)
class Retire(Step):
    """Clear the content of these requests' events, keeping their place and hashes in the chain
    (`bridge.store.chain`): pruned, yet the events after them still verify."""

    name = "retire"
    request_ids: Sequence[str]


@dataclass(frozen=True)
class ChainEnds(Step):
    """The chain's head, its checkpoint and the first event after it that is not retired
    (`ChainSpan`), with the head locked until the transaction ends."""

    name = "chain_ends"


@dataclass(frozen=True)
class ChainSpan:
    head: int
    cut: int
    first_kept: int | None


@dataclass(frozen=True)
class HashAt(Step):
    """The hash of the event at chain position `seq` (None: there is none)."""

    name = "hash_at"
    seq: int


@dataclass(frozen=True)
class Cut(Step):
    """Delete the retired events after `after` up to `upto` and make `upto`, whose hash is
    `digest`, the chain's checkpoint."""

    name = "cut"
    after: int
    upto: int
    digest: str


Txn = Generator[Step, Any, T]
_DELIVERABLE = frozenset({RequestState.answered, RequestState.expired})


def transition(request_id: str, from_states: frozenset[RequestState] | set[RequestState], to_state: RequestState,
               *, event: Event | None, answer: Answer | None, error: str | None, enqueue: str | None,
               now: datetime) -> Txn[Request | None]:
    request = yield Locked(request_id)
    if request is None or request.state not in from_states:
        return None
    move(request, to_state, now, answer=answer, error=error)
    yield Save(request, () if event is None else (event,), enqueue)
    return request


def modify(request_id: str, change: Callable[[Request], bool], *, now: datetime,
           events: Sequence[Event]) -> Txn[Request | None]:
    request = yield Locked(request_id)
    if request is None or not change(request):
        return None
    request.updated_at = now
    yield Save(request, tuple(events))
    return request


def update(request_id: str, *, now: datetime, expect: Mapping[str, Any] | None,
           fields: Mapping[str, Any]) -> Txn[Request | None]:
    request = yield Locked(request_id)
    if request is None or not claim_holds(request, expect):
        return None
    for key, value in fields.items():
        setattr(request, key, value)
    request.updated_at = now
    yield Save(request)
    return request


def add_event(event: Event) -> Txn[None]:
    yield AddEvents((event,))


def finish_delivery(item_id: int, request_id: str, *, event: Event, now: datetime,
                    answer: Answer | None) -> Txn[Request | None]:
    yield OutboxDone(item_id)
    yield AddEvents((event,))
    request = yield Locked(request_id)
    if request is None:
        return None
    moved = request.answer is not None and request.state in _DELIVERABLE
    if moved:
        move(request, RequestState.delivered, now)
    if answer is not None:
        request.answer = answer
    if moved or answer is not None:
        request.updated_at = now
        yield Save(request)
    return request if moved else None


def heal(found: Sequence[str], now: datetime) -> Txn[list[str]]:
    """Each of `found` re-checked (and locked) in the transaction, then moved to `delivered`."""
    healed = []
    for request_id in found:
        if not (yield StillStuck(request_id)):
            continue
        request = yield Locked(request_id)
        if request is None or request.answer is None:
            continue
        before = request.state.value
        move(request, RequestState.delivered, now)
        yield Save(request, (Event(id=0, request_id=request_id, at=now, kind="delivered", actor="bridge",
                                   data={"outcome": before, "healed": True}),))
        healed.append(request_id)
    return healed


def prune(before: datetime, limit: int) -> Txn[int]:
    ids = yield Prunable(before, limit)
    if ids:
        yield Retire(ids)
        yield Forget(ids)
        yield from cut_chain()
    return len(ids)


def cut_chain() -> Txn[None]:
    """Delete the chain's retired prefix, keeping the hash where it ends as the checkpoint."""
    span: ChainSpan = yield ChainEnds()
    upto = (span.first_kept if span.first_kept is not None else span.head + 1) - 1
    if upto <= span.cut:
        return
    digest = yield HashAt(upto)
    if digest is None:  # a gap where the cut would be: not the pruner's to hide (verify reports it)
        return
    yield Cut(span.cut, upto, digest)


def drive(txn: Txn[T], steps: object) -> T:
    """Run `txn` with synchronous steps (each `steps.<name>(step)` returns its result)."""
    try:
        step = next(txn)
        while True:
            step = txn.send(getattr(steps, step.name)(step))
    except StopIteration as done:
        result: T = done.value
        return result


async def drive_async(txn: Txn[T], steps: object) -> T:
    """Run `txn` with asynchronous steps (each `steps.<name>(step)` is awaited)."""
    try:
        step = next(txn)
        while True:
            step = txn.send(await getattr(steps, step.name)(step))
    except StopIteration as done:
        result: T = done.value
        return result


class TransactionalStore(Store):
    """The Store's multi-step writes, over a backend's `transact` (one transaction each)."""

    @abc.abstractmethod
    async def transact(self, txn: Txn[T], *, one_statement: bool = False) -> T:
        """Drive `txn` inside one write transaction of the backend. `one_statement`: `txn` asks
        for one step of one statement, atomic on its own (a backend may skip BEGIN … COMMIT)."""

    @abc.abstractmethod
    async def stuck_with_answer(self) -> list[str]:
        """The ids `heal_deliveries` may move (read without locking: re-checked in its transaction)."""

    async def transition(self, request_id: str, from_states: frozenset[RequestState] | set[RequestState],
                         to_state: RequestState, *, event: Event | None = None, answer: Answer | None = None,
                         error: str | None = None, enqueue: str | None = None, now: datetime) -> Request | None:
        return await self.transact(transition(request_id, from_states, to_state, event=event, answer=answer,
                                              error=error, enqueue=enqueue, now=now))

    async def modify_request(self, request_id: str, change: Callable[[Request], bool], *, now: datetime,
                             events: Sequence[Event] = ()) -> Request | None:
        return await self.transact(modify(request_id, change, now=now, events=events))

    async def update_request(self, request_id: str, *, now: datetime, expect: Mapping[str, Any] | None = None,
                             **fields: Any) -> Request | None:
        return await self.transact(update(request_id, now=now, expect=expect, fields=fields))

    async def add_event(self, request_id: str, kind: str, actor: str, data: dict[str, Any], at: datetime) -> None:
        event = Event(id=0, request_id=request_id, at=at, kind=kind, actor=actor, data=data)
        await self.transact(add_event(event), one_statement=True)

    async def finish_delivery(self, item_id: int, request_id: str, *, event: Event, now: datetime,
                              answer: Answer | None = None) -> Request | None:
        return await self.transact(finish_delivery(item_id, request_id, event=event, now=now, answer=answer))

    async def heal_deliveries(self, now: datetime) -> list[str]:
        found = await self.stuck_with_answer()
        return await self.transact(heal(found, now)) if found else []

    async def prune_closed(self, before: datetime, *, limit: int = 500) -> int:
        return await self.transact(prune(before, limit))


__all__ = [
    "AddEvents",
    "ChainEnds",
    "ChainSpan",
    "Cut",
    "HashAt",
    "Locked",
    "OutboxDone",
    "Retire",
    "Save",
    "Step",
    "StillStuck",
    "TransactionalStore",
    "Txn",
    "drive",
    "drive_async",
]
