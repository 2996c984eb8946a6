"""The timer loop: deadlines, reminders and escalation, driven by APScheduler.

The store is the only source of truth: each open request keeps its next instants
(`deadline`, `next_reminder_at`, `next_escalation_at`, absolute UTC). In memory the
scheduler keeps a small index — a heap of (instant, request id), a few hundred bytes per
pending request — and ONE APScheduler date job armed at the earliest instant. When it
fires, `run_due()` re-reads each due request from the store, applies what is due
(`bridge.escalation.TimerActions`), and re-arms from the instants it stored.

On start the index is rebuilt from the store and `run_due()` runs at once: a deadline
that passed during downtime fires immediately, exactly once (closing is a compare-and-set
in the store); reminders missed during downtime collapse into one.

With a store that replicas share (PostgreSQL), a timer armed, re-armed or cleared on one
replica reaches the others as it is committed (`touch`, fed a batch at a time by the
store's change notifications, `bridge.store.pg_follow`), and every replica also re-reads
the timers due soon from the store every RESYNC (5 s), and at once after missing
notifications (a forged or stale instant is corrected before it is due): a request
taken in by a replica that then stopped still gets its deadline, reminders and escalation
from the others, at most RESYNC late.
When several replicas hold the same timer, each action is a compare-and-set in the store,
so it happens once.

Tests drive time with an injected clock and call `await scheduler.run_due()`; the
APScheduler job is armed at "now + (instant - clock.now())" in wall time, so a manual
clock never makes it spin.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from bridge.escalation import TimerActions
from bridge.models import Request
from bridge.ports import Clock
from bridge.service import BridgeService
from bridge.store.base import StoreError
from bridge.timers import EPSILON, next_instant

log = logging.getLogger("hitl_bridge.timers")

WAKE_JOB = "hitl-bridge-timers"
RESYNC_JOB = "hitl-bridge-timers-resync"
RESYNC = timedelta(seconds=5)  # shared stores: how often the timers due soon are re-read
RETRY_AFTER = timedelta(seconds=1)  # a timer whose action failed (store busy...) is retried
REBUILD_PAGE = 5000  # compact timer rows read per query at start
PARALLEL = 16  # due requests handled side by side (their store calls queue up together)


@dataclass(frozen=True)
class Fired:
    """One request whose due timers were applied (for metrics and benchmarks)."""

    request_id: str
    due_at: datetime  # the instant that was due
    fired_at: datetime  # the clock when it was applied
    request: Request  # as stored after


class TimerIndex:
    """Earliest pending instant per request id, as a heap with lazy deletion."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, str]] = []
        self._armed: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._armed)

    def arm(self, request_id: str, at: datetime | None) -> bool:
        """Set the request's next instant (None: nothing scheduled). True when it changed."""
        if at is None:
            return self._armed.pop(request_id, None) is not None
        stamp = at.timestamp()
        if self._armed.get(request_id) == stamp:
            return False
        self._armed[request_id] = stamp
        heapq.heappush(self._heap, (stamp, request_id))
        return True

    def instant_of(self, request_id: str) -> float | None:
        """The request's armed instant (epoch seconds), or None."""
        return self._armed.get(request_id)

    def pop_due(self, now: float) -> list[str]:
        """Remove and return the ids whose instant is at or before `now`, earliest first."""
        out: list[str] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            stamp, request_id = heapq.heappop(heap)
            if self._armed.get(request_id) == stamp:
                del self._armed[request_id]
                out.append(request_id)
        return out

    def next_at(self) -> float | None:
        heap = self._heap
        while heap and self._armed.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)  # stale entry (re-armed or dropped)
        return heap[0][0] if heap else None

    def clear(self) -> None:
        self._heap.clear()
        self._armed.clear()


class Scheduler:
    """Owns every timer of every open request. `start()` after the service's channels."""

    def __init__(self, service: BridgeService, *, clock: Clock | None = None) -> None:
        self.service = service
        self.clock: Clock = clock or service.clock
        self.actions = TimerActions(service)
        self.index = TimerIndex()
        self.fired = 0
        self.observers: list[Callable[[Fired], None]] = []
        self._lock = asyncio.Lock()
        self._aps: AsyncIOScheduler | None = None
        self._armed_for: float | None = None  # the instant the APScheduler job wakes for
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False

    # lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        """Rebuild the index from the store, start APScheduler, fire whatever is overdue."""
        self._stopping = False
        self.service.on_created.append(self.watch)
        self.service.changes.on_timer.append(self.touch)  # other replicas' timers, as they change
        self.service.changes.on_gap.append(self._resync_soon)
        await self.rebuild()
        if logging.getLogger("apscheduler").level == logging.NOTSET:
            logging.getLogger("apscheduler").setLevel(logging.WARNING)  # one line per wake-up otherwise
        self._aps = AsyncIOScheduler(timezone=UTC)
        self._aps.start()
        if self.service.store.shared:
            self._aps.add_job(self._resync_guarded, IntervalTrigger(seconds=RESYNC.total_seconds(), timezone=UTC),
                              id=RESYNC_JOB, coalesce=True, max_instances=1, misfire_grace_time=None)
        await self.run_due()

    async def stop(self) -> None:
        if self.watch in self.service.on_created:
            self.service.on_created.remove(self.watch)
        if self.touch in self.service.changes.on_timer:
            self.service.changes.on_timer.remove(self.touch)
        if self._resync_soon in self.service.changes.on_gap:
            self.service.changes.on_gap.remove(self._resync_soon)
        if self._aps is not None and self._aps.running:
            self._aps.shutdown(wait=False)
        self._aps = None
        self._armed_for = None
        self._stopping = True
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        async with self._lock:  # let a firing in progress finish its store writes
            pass

    async def rebuild(self) -> int:
        """Index every open request that has a timer, from the store's compact timer rows
        (id + instant, read page by page along an index: no request is loaded whole); finish
        the steps a crash cut short (only those requests are loaded, in the background)."""
        self.index.clear()
        store = self.service.store
        after: tuple[datetime, str] | None = None
        count = 0
        unfinished: list[str] = []
        while True:
            page = await store.timer_rows(after=after, limit=REBUILD_PAGE)
            for row in page:
                self.index.arm(row.request_id, row.at)
                if row.resume:
                    unfinished.append(row.request_id)
            count += len(page)
            if len(page) < REBUILD_PAGE:
                break
            after = (page[-1].at, page[-1].request_id)
        if unfinished:
            self.service.background(self._resume_all(unfinished), "resume timer steps")
        log.info("timers rebuilt from the store: %d open request(s) with timers", len(self.index))
        return count

    async def _resume_all(self, request_ids: list[str]) -> None:
        """Steps claimed before a restart: on a store no other process uses, their claimer
        was this daemon's previous run, so they are taken over now rather than when their
        lease ends. On a shared store another replica may be working on them: the lease decides."""
        now = self.clock.now()
        for request_id in request_ids:
            try:
                request = await self.service.store.get_request(request_id)
                if request is None or not request.is_open:
                    continue
                current = request
                if not self.service.store.shared:
                    for step in request.timer_steps:
                        current = await self.actions.take_over(current, step, now)
                await self.actions.repost_escalated(current)
            except Exception:
                log.exception("resuming the timer steps of %s failed", request_id)

    async def resync(self) -> int:
        """Arm the timers the store has due within two RESYNC periods (requests another
        replica took in, or changed); returns how many instants changed here."""
        horizon = self.clock.now() + 2 * RESYNC
        changed = sum(self.index.arm(request_id, at) for request_id, at in await self.service.store.timers_due(horizon))
        if changed:
            log.info("timers: %d instant(s) picked up from the shared store", changed)
            self._arm()
        return changed

    async def _resync_guarded(self) -> None:
        if self._stopping:
            return
        try:
            await self.resync()
        except Exception:
            if not self._stopping:
                log.exception("re-reading the timers from the store failed; trying again in %s", RESYNC)

    def touch(self, instants: Mapping[str, datetime | None]) -> None:
        """Other replicas armed, re-armed or cleared these requests' timers (each one's next
        instant as committed, None when it has none or closed): follow them at once, with
        one look at the wake-up job for the whole batch (only an earlier instant moves it)."""
        arm = self.index.arm
        changed = False
        for request_id, at in instants.items():
            changed = arm(request_id, at) or changed
        if changed:
            self._arm()

    @property
    def wakes_at(self) -> datetime | None:
        """The instant the wake-up job is armed for (None: not armed)."""
        return None if self._armed_for is None else datetime.fromtimestamp(self._armed_for, UTC)

    def _resync_soon(self) -> None:
        """Notifications were missed (a lost connection): re-read the timers due soon."""
        if self._stopping or self._aps is None:
            return
        task = asyncio.get_running_loop().create_task(self._resync_guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def watch(self, request: Request) -> None:
        """A request was created or its timers changed: (re)arm it."""
        if self.index.arm(request.id, next_instant(request)):
            self._arm()

    # firing -----------------------------------------------------------------------------
    async def run_due(self, now: datetime | None = None) -> int:
        """Apply every timer due at `now` (default: the clock, re-read until nothing is
        due). Returns how many requests were acted on."""
        count = 0
        async with self._lock:
            while True:
                at = now or self.clock.now()
                due = self.index.pop_due(at.timestamp())
                if not due:
                    break
                for start in range(0, len(due), PARALLEL):
                    if self._stopping:
                        break  # the store keeps the instants: the next start fires them
                    batch = due[start:start + PARALLEL]  # distinct requests: safe side by side
                    count += sum(await asyncio.gather(*(self._fire_one(rid, at) for rid in batch)))
                if now is not None or self._stopping:
                    break
            self._arm()
        return count

    async def _fire_one(self, request_id: str, now: datetime) -> int:
        try:
            request = await self.service.store.get_request(request_id)
            if request is None or not request.is_open:
                return 0
            due_at = next_instant(request)
            if due_at is None or due_at > now + EPSILON:  # changed meanwhile: re-arm only
                self.index.arm(request_id, due_at)
                return 0
            updated = await self.actions.fire(request, now)
        except StoreError as exc:  # the store reported it (once); one line alike for every request
            log.warning("timers: the store failed (%s); retrying in %s", exc, RETRY_AFTER)
            self.index.arm(request_id, now + RETRY_AFTER)
            return 0
        except Exception:
            log.exception("timer of %s failed; retrying in %s", request_id, RETRY_AFTER)
            self.index.arm(request_id, now + RETRY_AFTER)
            return 0
        self.index.arm(request_id, next_instant(updated))
        self.fired += 1
        event = Fired(request_id, due_at, now, updated)
        for observer in self.observers:
            observer(event)
        return 1

    # APScheduler wake-up ----------------------------------------------------------------
    def _arm(self) -> None:
        """Point the single APScheduler date job at the earliest pending instant."""
        aps = self._aps
        if aps is None or not aps.running:
            return
        at = self.index.next_at()
        if at is None:
            if self._armed_for is not None and aps.get_job(WAKE_JOB):
                aps.remove_job(WAKE_JOB)
            self._armed_for = None
            return
        if self._armed_for is not None and self._armed_for <= at and aps.get_job(WAKE_JOB):
            return  # already waking earlier (or on time); that wake-up re-arms
        delay = max(0.0, at - self.clock.now().timestamp())
        wall = datetime.fromtimestamp(time.time() + delay, UTC)
        aps.add_job(self._wake, DateTrigger(run_date=wall, timezone=UTC), id=WAKE_JOB,
                    replace_existing=True, misfire_grace_time=None, coalesce=True, max_instances=1)
        self._armed_for = at

    async def _wake(self) -> None:
        """The APScheduler job: hand over to a task so the job itself ends at once (a
        re-arm while a long run is still going must not hit `max_instances`)."""
        self._armed_for = None
        task = asyncio.get_running_loop().create_task(self._run_guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_guarded(self) -> None:
        try:
            await self.run_due()
        except Exception:
            log.exception("timer run failed")
