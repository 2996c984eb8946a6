"""The Store port: composed of one small Protocol per concern (`bridge.store.concerns`), written
once over a backend that supplies the SQL (`bridge.store.transactions`), with two backends
(SQLite, PostgreSQL)."""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import ClassVar, Protocol

from bridge.health import Check, Health, Status
from bridge.store.concerns.audit import AuditStore
from bridge.store.concerns.grants import Grant, GrantStore
from bridge.store.concerns.kv import KVStore
from bridge.store.concerns.leads import LeadStore
from bridge.store.concerns.outbox import OutboxItem, OutboxStats, OutboxStore
from bridge.store.concerns.posts import PostStore
from bridge.store.concerns.requests import RequestStore, claim_holds
from bridge.store.concerns.retention import PRUNABLE_STATES, RetentionStore
from bridge.store.concerns.search import SearchStore
from bridge.store.concerns.timers import TimerRow, TimerStore
from bridge.store.concerns.votes import Vote, VoteStore


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


class ChangeSink(Protocol):
    """Where a store's follower reports what other processes commit (`bridge.notify.ChangeFeed`)."""

    def waited_ids(self) -> list[str]:
        """The ids somebody waits on now."""

    def anyone_waiting(self) -> bool:
        """A long poll or a live view waits now."""

    async def until_waited(self) -> None:
        """Return once somebody waits."""

    def changed_elsewhere(self, request_ids: Iterable[str]) -> None:
        """Something changed elsewhere (live views look again); these requests closed: wake
        their waiters (they read them again). Called once per batch of changes."""

    def timers_elsewhere(self, instants: Mapping[str, datetime | None]) -> None:
        """These requests' next timer instants are now these (None: no timer, or closed),
        as committed elsewhere; one call per batch of changes."""

    def gap(self) -> None:
        """Changes may have been missed meanwhile (a lost connection): re-read what matters."""


class Store(RequestStore, SearchStore, AuditStore, PostStore, OutboxStore, VoteStore, KVStore, TimerStore,
            RetentionStore, LeadStore, GrantStore, abc.ABC):
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

    def follow(self, sink: ChangeSink) -> None:  # nobody else writes: nothing to follow
        """Until `close()`, report to `sink` the changes other processes commit (another
        replica, the CLI on the same file), so that their waiters wake. In-process changes
        are published by the service itself."""

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect and migrate the schema up to date (from an empty database too)."""

    @abc.abstractmethod
    async def close(self) -> None: ...


__all__ = ["PRUNABLE_STATES", "ChangeSink", "Grant", "OutboxItem", "OutboxStats", "Store", "StoreError", "StoreFull",
           "StoreUnavailable", "TimerRow", "Vote", "claim_holds"]
