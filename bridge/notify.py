"""Change notifications: long polls, live views and timers wait on these.

`ChangeFeed` is the one wake-up path inside a daemon. The service publishes every change it
makes (with the request as stored); changes committed by another process reach it through
the store's follower (`Store.follow`: SQLite's data-version watch, PostgreSQL's
LISTEN/NOTIFY), which pokes the waiters of the requests that changed. A waiter is one
future in a dict: it costs no CPU until its request changes. A watch stream (many requests
on one connection, `bridge.http.watch`) is cheaper still: one `Watcher` registered under each
id it waits on, told of every change to them until it unregisters.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Protocol

from bridge.models import Request

CLOSED_KEPT = 10_000  # closed requests remembered for posting's check

#: a waiter's future resolves with the request as changed, or None: "it changed, read it again"
#: (a change made elsewhere, or the daemon shutting down)
Waiter = asyncio.Future[Request | None]


class Watcher(Protocol):
    """Told of each change to the requests it watches (`ChangeFeed.watch`), synchronously:
    it notes the change and returns (its own task reads and reports it)."""

    def changed(self, request_id: str, request: Request | None) -> None:
        """`request` as stored after a change here; None after a change elsewhere (read it again)."""

    def released(self) -> None:
        """The daemon is shutting down: stop waiting."""


class ChangeFeed:
    """Wakes waiters when a request changes; subscribers get every change. Also the sink a
    store's follower reports changes made by other processes to (`bridge.store.base.ChangeSink`)."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[Waiter]] = defaultdict(set)
        self._subscribers: set[asyncio.Queue[Request]] = set()
        #: watch streams by the request ids they wait on: kept until unwatched (not woken once)
        self._watches: dict[str, set[Watcher]] = {}
        self._released = False
        self._someone_waits: asyncio.Event | None = None
        #: grows with every change seen (here or elsewhere): a live view compares it with the
        #: one it rendered and skips the store when nothing changed
        self.version = 0
        #: this feed's name: a version seen by a browser means something only to the feed that
        #: gave it (another replica, or this daemon before a restart, counts from elsewhere)
        self.instance = secrets.token_hex(4)
        #: live views waiting for any change at all (`until_changed`)
        self._watchers: set[asyncio.Future[None]] = set()
        #: {request id: next timer instant or None} of a batch of changes made elsewhere: the scheduler
        self.on_timer: list[Callable[[Mapping[str, datetime | None]], None]] = []
        #: called after the follower missed changes for a while (a lost connection)
        self.on_gap: list[Callable[[], None]] = []
        #: requests this process saw close, the latest CLOSED_KEPT (posting skips a store read
        #: for the others; a close it did not see is settled by the store when copies are recorded)
        self._closed: OrderedDict[str, None] = OrderedDict()

    # this process's changes ----------------------------------------------------------------
    def publish(self, request: Request) -> None:
        self._moved()
        if not request.is_open:
            self._closed[request.id] = None
            if len(self._closed) > CLOSED_KEPT:
                self._closed.popitem(last=False)
        for fut in self._waiters.pop(request.id, ()):
            if not fut.done():
                fut.set_result(request)
        for watcher in self._watches.get(request.id, ()):
            watcher.changed(request.id, request)
        for queue in list(self._subscribers):
            if queue.qsize() < 1000:  # a stuck subscriber must not grow without bound
                queue.put_nowait(request)

    def saw_close(self, request_id: str) -> bool:
        """True when this process saw `request_id` close (among the latest CLOSED_KEPT)."""
        return request_id in self._closed

    def _moved(self) -> None:
        self.version += 1
        for fut in self._watchers:
            if not fut.done():
                fut.set_result(None)
        self._watchers.clear()

    # waiting ---------------------------------------------------------------------------------
    @property
    def token(self) -> str:
        """Where this feed is now, as a live view hands it back: `<instance>.<version>`."""
        return f"{self.instance}.{self.version}"

    async def until_changed(self, seen: str, within: float) -> bool:
        """Wait until anything changes after `seen` (a `token` this feed gave), at most `within`
        seconds. At once (False) when `seen` is not where this feed is now: another feed's,
        stale, or garbage; True when it waited. One future per caller: no CPU while waiting."""
        if seen != self.token or self._released:
            return False
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._watchers.add(fut)
        if self._someone_waits is not None:
            self._someone_waits.set()  # the store's follower watches other processes meanwhile
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(within):
                    await fut
        finally:
            self._watchers.discard(fut)
        return True

    def waiter(self, request_id: str) -> Waiter:
        """A future resolved at the request's next change: with the request, or with None
        when it changed elsewhere or the daemon is shutting down (read it again). Register
        it BEFORE reading the request, so a change between the read and the wait is not missed."""
        fut: Waiter = asyncio.get_running_loop().create_future()
        if self._released:
            fut.set_result(None)
        else:
            self._waiters[request_id].add(fut)
            if self._someone_waits is not None:
                self._someone_waits.set()
        return fut

    @property
    def released(self) -> bool:
        return self._released

    def release_waiters(self) -> None:
        """Shutting down: wake every long poll now (each answers with the request as it is)."""
        self._released = True
        for watcher in self._watchers:
            if not watcher.done():
                watcher.set_result(None)
        self._watchers.clear()
        for waiters in self._waiters.values():
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)
        self._waiters.clear()
        for stream in {w for watchers in self._watches.values() for w in watchers}:
            stream.released()

    def watch(self, request_id: str, watcher: Watcher) -> None:
        """Tell `watcher` of every change to `request_id` until `unwatch`. Register it BEFORE
        reading the request (as a `waiter`). Nothing is told once the daemon is shutting down."""
        self._watches.setdefault(request_id, set()).add(watcher)
        if self._someone_waits is not None:
            self._someone_waits.set()

    def unwatch(self, request_id: str, watcher: Watcher) -> None:
        watchers = self._watches.get(request_id)
        if watchers is not None:
            watchers.discard(watcher)
            if not watchers:
                del self._watches[request_id]

    def stream_count(self) -> int:
        """Watch streams registered now."""
        return len({w for watchers in self._watches.values() for w in watchers})

    def watched_count(self) -> int:
        """Request ids watch streams wait on (an id two streams watch counts twice)."""
        return sum(len(w) for w in self._watches.values())

    def discard(self, request_id: str, fut: Waiter) -> None:
        waiters = self._waiters.get(request_id)
        if waiters is not None:
            waiters.discard(fut)
            if not waiters:
                self._waiters.pop(request_id, None)

    def watching_count(self) -> int:
        """Live views held until the next change."""
        return len(self._watchers)

    def waiting_count(self) -> int:
        return sum(len(w) for w in self._waiters.values())

    # the sink of changes made by other processes ---------------------------------------------
    def waited_ids(self) -> list[str]:
        """The ids somebody waits on now (a long poll or a watch stream)."""
        if not self._watches:
            return list(self._waiters)
        return list(self._waiters.keys() | self._watches.keys())

    def anyone_waiting(self) -> bool:
        """A long poll, a watch stream or a live view waits here now (a change elsewhere is awaited)."""
        return bool(self._waiters or self._watchers or self._watches)

    async def until_waited(self) -> None:
        """Return once somebody waits (at once when somebody does): a follower that only
        serves waiters sleeps here, at no cost, while nobody waits."""
        while not self._waiters and not self._watchers and not self._watches:
            if self._someone_waits is None:
                self._someone_waits = asyncio.Event()
            self._someone_waits.clear()
            await self._someone_waits.wait()

    def changed_elsewhere(self, request_ids: Iterable[str]) -> None:
        """Something changed in another process (live views look again); `request_ids`
        closed there: their waiters read them again. A waiter waits for a close (`wait_closed`),
        so a change that leaves a request open wakes none (no read for nothing)."""
        self._moved()
        for request_id in request_ids:
            for fut in self._waiters.pop(request_id, ()):
                if not fut.done():
                    fut.set_result(None)
            for watcher in self._watches.get(request_id, ()):
                watcher.changed(request_id, None)

    def timers_elsewhere(self, instants: Mapping[str, datetime | None]) -> None:
        """Other processes set these requests' next timer instants (None: none, or closed)."""
        if instants:
            for hook in self.on_timer:
                hook(instants)

    def gap(self) -> None:
        """Changes made elsewhere may have been missed (the follower reconnected)."""
        self._moved()
        for hook in self.on_gap:
            hook()

    # subscribers -----------------------------------------------------------------------------
    def subscribe(self) -> asyncio.Queue[Request]:
        queue: asyncio.Queue[Request] = asyncio.Queue()
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Request]) -> None:
        self._subscribers.discard(queue)
