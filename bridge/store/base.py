"""The Store port: one async interface, two implementations (SQLite, PostgreSQL)."""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar, Protocol

from bridge.health import Check, Health, Status
from bridge.models import Answer, Event, Post, Request, RequestState
from bridge.store.query import RequestQuery


class StoreError(Exception):
    """The store could not do what was asked (schema too new, connection lost...).

    The message is fit for an API caller (no file path or password); `fix` tells the
    operator what to do and goes to the log, `/readyz` and `doctor`."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.fix = fix


class StoreFull(StoreError):
    """The database, or the disk under it, is full: nothing new can be kept until space is freed."""


class StoreUnavailable(StoreError):
    """The store cannot keep writes right now: its file was deleted or replaced, it is
    read-only, the disk fails, or the database server is gone."""


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


@dataclass(frozen=True)
class TimerRow:
    """An open request's earliest timer as the store keeps it (`requests.next_at`): all the
    scheduler needs to arm it. `resume`: a restart must look at the request whole (an
    escalation level reached or a timer step claimed)."""

    request_id: str
    at: datetime
    resume: bool


#: a closed request may be pruned (with what belongs to it) once its outcome needs nothing more:
#: no outbox entry left waiting or dead (an undelivered outcome is kept)
PRUNABLE_STATES = ("cancelled", "delivered", "expired", "failed")


@dataclass(frozen=True)
class Vote:
    request_id: str
    voter: str  # responder key "platform:user_id"
    value: str
    name: str
    at: datetime


def claim_holds(request: Request, expect: Mapping[str, Any] | None) -> bool:
    """An `update_request(expect=...)` claim: the request is still open and every named
    field still has the value the caller read."""
    if expect is None:
        return True
    return request.is_open and all(getattr(request, key) == value for key, value in expect.items())


class ChangeSink(Protocol):
    """Where a store's follower reports what other processes commit (`bridge.notify.ChangeFeed`)."""

    def waited_ids(self) -> list[str]:
        """The ids somebody waits on now."""

    async def until_waited(self) -> None:
        """Return once somebody waits."""

    def changed_elsewhere(self, request_ids: Iterable[str]) -> None:
        """These requests changed: wake their waiters (they read them again)."""

    def timer_elsewhere(self, request_id: str, at: datetime | None) -> None:
        """The request's next timer instant is now `at` (None: no timer, or closed)."""

    def gap(self) -> None:
        """Changes may have been missed meanwhile (a lost connection): re-read what matters."""


class Store(abc.ABC):
    """Everything the bridge remembers. Every method is atomic on its own."""

    #: several processes (replicas) act on the same data: timers are re-read periodically
    shared: ClassVar[bool] = False
    #: where the store reports its faults as they happen (set by `watch`)
    health: Health | None = None

    def watch(self, health: Health) -> None:
        """Report faults to `health` as they happen, and let it run `check` when read."""
        self.health = health
        health.probe("store", self.check)

    async def check(self) -> Check:
        """A cheap probe: can the store keep a write right now?"""
        return Check("store", Status.ok)

    def report_fault(self, error: StoreError) -> None:
        """Tell the health registry (logged once per change, not once per request)."""
        if self.health is not None:
            self.health.failing("store", str(error), error.fix)

    def follow(self, sink: ChangeSink) -> None:  # noqa: B027 - nobody else writes: nothing to follow
        """Until `close()`, report to `sink` the changes other processes commit (another
        replica, the CLI on the same file), so that their waiters wake. In-process changes
        are published by the service itself."""

    async def closed_among(self, request_ids: Sequence[str]) -> list[str]:
        """The ids of `request_ids` whose request is no longer open (or gone)."""
        out = []
        for request_id in request_ids:
            request = await self.get_request(request_id)
            if request is None or not request.is_open:
                out.append(request_id)
        return out

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect and migrate the schema up to date (from an empty database too)."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    # requests -----------------------------------------------------------------------
    @abc.abstractmethod
    async def create_request(self, request: Request, event: Event | None = None) -> tuple[Request, bool]:
        """Insert `request` unless (source, created_by, external_id) exists: then return the
        stored one and False (an external_id is its creator's own: two creators using the
        same one never meet). `event` (its id is ignored) is appended in the same transaction."""

    @abc.abstractmethod
    async def get_request(self, request_id: str) -> Request | None: ...

    @abc.abstractmethod
    async def find_by_external_id(self, source: str, external_id: str,
                                  created_by: str | None = None) -> Request | None:
        """The request `created_by` (None: no verified creator, as an engine's) stored with
        `external_id` from `source`."""

    @abc.abstractmethod
    async def list_requests(
        self,
        *,
        states: list[RequestState] | None = None,
        source: str | None = None,
        route: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Request]:
        """Newest first."""

    @abc.abstractmethod
    async def count_by_state(self) -> dict[str, int]: ...

    @abc.abstractmethod
    async def find_requests(self, query: RequestQuery, *, limit: int = 100, offset: int = 0) -> list[Request]:
        """The requests `query` matches, newest first (search and "waiting for me" lists)."""

    async def pages(self, query: RequestQuery, *, size: int = 500) -> AsyncIterator[list[Request]]:
        """Every request `query` matches, newest first, a page at a time (keyset paging: each
        page costs the same however far in, and a request that changes state meanwhile
        makes no other one skipped or seen twice)."""
        while True:
            page = await self.find_requests(query, limit=size)
            if page:
                yield page
            if len(page) < size:
                return
            query = replace(query, before=(page[-1].created_at, page[-1].id))

    @abc.abstractmethod
    async def count_requests(self, query: RequestQuery) -> dict[str, int]:
        """How many requests `query` matches, by state (with no `states`, one call counts
        every tab of a list)."""

    @abc.abstractmethod
    async def transition(
        self,
        request_id: str,
        from_states: frozenset[RequestState] | set[RequestState],
        to_state: RequestState,
        *,
        event: Event | None = None,
        answer: Answer | None = None,
        error: str | None = None,
        enqueue: str | None = None,
        now: datetime,
    ) -> Request | None:
        """Compare-and-set: move to `to_state` only when the current state is in
        `from_states`. Returns the updated request, or None when the state did not match
        (someone else won). In the same transaction: store `answer`/`error`, append
        `event`, and when `enqueue` is set add an outbox entry for that outcome."""

    @abc.abstractmethod
    async def modify_request(self, request_id: str, change: Callable[[Request], bool], *, now: datetime,
                             events: Sequence[Event] = ()) -> Request | None:
        """Apply `change` to the stored request in one transaction (the row locked against
        every replica): it edits the request in place and returns True to keep the edit and
        append `events`, or False to leave everything as it was. Returns the request as
        stored after a kept edit, else None (not found, or `change` said no). `change` must
        be quick and do no I/O: it runs inside the transaction."""

    @abc.abstractmethod
    async def update_request(self, request_id: str, *, now: datetime, expect: Mapping[str, Any] | None = None,
                             **fields: Any) -> Request | None:
        """Set plain fields (targets, escalation_level, next_reminder_at, answer...).

        With `expect` this is a claim (see `claim_holds`): applied only while the request is
        open and each named field still has the given value, else None. Timers use it so
        that a reminder or an escalation step is taken once, whichever replica fires it."""

    # audit ----------------------------------------------------------------------------
    @abc.abstractmethod
    async def add_event(self, request_id: str, kind: str, actor: str, data: dict[str, Any], at: datetime) -> None: ...

    @abc.abstractmethod
    async def list_events(self, request_id: str) -> list[Event]: ...

    # posts (copies of a request on channels) -----------------------------------------
    @abc.abstractmethod
    async def add_post(self, post: Post) -> None: ...

    async def record_posts(self, request_id: str, posts: list[Post], events: list[Event], *,
                           now: datetime) -> Request | None:
        """Store the copies and events of one posting; when a copy is ok and the request is
        still `pending`, move it to `posted` and return it (else None). The events are kept
        only while the request is open, decided atomically with its close (a cancel that
        raced the posting is never followed by `posted` in the audit); the copies are kept
        either way, so they can be updated. Implementations do this in one transaction."""
        for post in posts:
            await self.add_post(post)
        current = await self.get_request(request_id)
        if current is None or not current.is_open:
            return None
        for event in events:
            await self.add_event(event.request_id, event.kind, event.actor, event.data, event.at)
        if not any(p.ok for p in posts):
            return None
        return await self.transition(request_id, {RequestState.pending}, RequestState.posted, now=now)

    @abc.abstractmethod
    async def list_posts(self, request_id: str, channel: str | None = None) -> list[Post]: ...

    # outbox -----------------------------------------------------------------------------
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

    # votes (quorum) ---------------------------------------------------------------------
    @abc.abstractmethod
    async def add_vote(self, vote: Vote) -> bool:
        """False when this voter already voted on this request (counted once)."""

    @abc.abstractmethod
    async def list_votes(self, request_id: str) -> list[Vote]: ...

    # small key/value space for adapters (Telegram callback tokens, Slack cache...) ------
    @abc.abstractmethod
    async def kv_put(
        self, namespace: str, key: str, value: dict[str, Any], expires_at: datetime | None = None
    ) -> None: ...

    @abc.abstractmethod
    async def kv_get(self, namespace: str, key: str, now: datetime | None = None) -> dict[str, Any] | None: ...

    @abc.abstractmethod
    async def kv_delete(self, namespace: str, key: str) -> bool:
        """Remove the entry; True only for the caller that removed it (a claim among replicas)."""

    @abc.abstractmethod
    async def kv_items(self, namespace: str, now: datetime | None = None) -> list[tuple[str, dict[str, Any]]]:
        """Every entry of a namespace (not expired at `now`), by key. For small namespaces."""

    # roles only one replica may hold (Telegram long polling) ------------------------------
    async def try_lead(self, role: str) -> bool:
        """True while this process holds `role` among the processes sharing the store; call
        it again to check that it still does. A store that is not shared: always True."""
        return True

    async def resign(self, role: str) -> None:  # noqa: B027 - nothing to give up unless shared
        """Give `role` up (on stop) so that another replica takes it at once."""

    # timers -----------------------------------------------------------------------------
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

    # retention ----------------------------------------------------------------------------
    @abc.abstractmethod
    async def prune_closed(self, before: datetime, *, limit: int = 500) -> int:
        """Delete up to `limit` closed requests last changed before `before` whose outcome
        needs nothing more (PRUNABLE_STATES, no outbox entry pending or dead), with their
        events, posts, votes and outbox entries, in one short transaction. Returns how many."""
