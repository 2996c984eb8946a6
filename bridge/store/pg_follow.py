"""Replicas wake each other: PostgreSQL LISTEN/NOTIFY on a connection of its own.

A trigger on `requests` (schema_postgres.sql, `hitl_bridge_notify`) calls `pg_notify` for
every inserted or updated row, inside the writing transaction: PostgreSQL delivers it at
commit, and never for a rolled-back change, so a notification means committed. The payload
is `state<TAB>next timer instant (epoch seconds, empty: none)<TAB>id`; the channel is
`hitl_bridge.<schema>` (bridges in other schemas of the database do not hear each other).

Each daemon keeps one listening connection, and every replica hears every change (its own
too), so what a notification costs is paid once per replica per change: it is kept small.
Notifications are handled a batch at a time: asyncpg's callback only queues the payload,
and one pass over the queue (at most BATCH of them; a longer burst is handled in several
passes, the event loop runs in between) makes one call for the batch: the version live
views wait on moves once, the waiters of the requests that closed are woken (one wake-up
each; a change that leaves a request open wakes nobody: waits are for a close), and the
scheduler gets every request's latest instant at once (`Scheduler.touch`: one look at its
wake-up job). No read at all: the payload says what the waiters and the scheduler need.
Under a stream of notifications the connection is read at most every COALESCE_S (50 ms;
5 ms while a long poll or a live view waits here, COALESCE_WAITED_S): after a read that
brought notifications, reading pauses that long, and what arrived meanwhile comes in one
read, one wake-up of the process (a quiet connection is read at once: the first change
after a pause is handled without delay). Each wake-up of a process costs far more than a
notification handled in a batch, so this is what keeps a replica's share of the others'
intake small.

A payload is a hint, never trusted further: anyone who may connect to the database may
NOTIFY on the channel. A malformed one is logged (once per batch) and skipped; a forged
one costs a waiter's read or a timer's re-read, never a double or early action (every
timer action re-reads its row and is a compare-and-set), and the scheduler's resync
re-reads the instants due soon from the table.

When the connection is lost (server restart, a killed backend, a network cut), the
follower says so (log + health `store:changes`, degraded: answers still work, waiters on
this replica just learn of other replicas' changes late), reconnects with backoff, LISTENs
again and only then re-checks what it may have missed: which waited requests closed
meanwhile, and the timers due soon (`gap`). Notifications received before the loss are
still handled (they were committed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg

from bridge.health import Health
from bridge.store.base import ChangeSink
from bridge.store.pg_support import decode_text

log = logging.getLogger("hitl_bridge.store")

COMPONENT = "store:changes"
KEEPALIVE_S = 10.0  # an idle listening connection is checked this often (a silent network cut)
CHECK_TIMEOUT_S = 5.0
BACKOFF_S = (0.05, 0.2, 1.0, 2.0, 5.0)
OPEN = frozenset({"pending", "posted"})
BATCH = 2000  # notifications handled in one pass; a longer burst takes several
#: a stream of notifications is read at most this often (one wake-up for many): with nobody
#: waiting here only timers hear them (minutes away), with a long poll or a live view waiting
#: the hold is short (a wake-up from another replica is late by that much at most)
COALESCE_S = 0.05
COALESCE_WAITED_S = 0.005
MALFORMED_LOG_EVERY_S = 60.0


def channel_of(schema: str) -> str:
    """The notification channel of the bridge whose tables live in `schema` (same rule as
    the trigger; a channel name has at most 63 bytes)."""
    import hashlib

    return "hitl_bridge." + (schema if len(schema.encode()) <= 48 else hashlib.md5(schema.encode()).hexdigest())


def parse(payload: str) -> tuple[str, bool, datetime | None] | None:
    """(request id, open, next timer instant) from a notification payload; None if malformed."""
    parts = payload.split("\t", 2)
    if len(parts) != 3:
        return None
    state, epoch, request_id = parts
    try:
        at = datetime.fromtimestamp(float(epoch), UTC) if epoch else None
        return decode_text(request_id), state in OPEN, at
    except (ValueError, OverflowError, OSError):  # not a number, nan, inf, past year 9999; a bad escape
        return None


class Follower:
    """The listening connection of one daemon and what it does with notifications."""

    def __init__(self, dsn: str, connect: dict[str, Any], sink: ChangeSink,
                 closed_among: Callable[[Sequence[str]], Awaitable[list[str]]], health: Health | None) -> None:
        self.dsn = dsn
        self.connect = connect
        self.sink = sink
        self.closed_among = closed_among
        self.health = health
        self.connected = asyncio.Event()  # set while listening (tests wait on it)
        self.reconnects = 0
        self.backend_pid: int | None = None  # the listening session (tests end it to prove recovery)
        self.received = 0  # notifications heard
        self.batches = 0  # passes that handled them
        self.handled = 0  # notifications handled (a lost connection drops none it had delivered)
        self.malformed = 0  # payloads skipped
        self._listened = False
        self.backoff: tuple[float, ...] = BACKOFF_S  # waits between reconnection attempts (the last one repeats)
        self.batch = BATCH
        self.coalesce_s = COALESCE_S
        self.coalesce_waited_s = COALESCE_WAITED_S
        self.last_hold = 0.0  # the latest pause of reading, seconds (tests)
        #: reading the connection can be paused (asyncpg's transport is reachable): a stream of
        #: notifications is read COALESCE_S at a time; without it each one is read on arrival
        self.coalescing = False
        self._queue: deque[str] = deque()
        self._draining = False  # a pass over the queue is scheduled
        self._transport: asyncio.Transport | None = None
        self._held: asyncio.TimerHandle | None = None  # reading paused until this fires
        self._malformed_logged = -MALFORMED_LOG_EVERY_S

    async def run(self) -> None:
        failures = 0
        while True:
            try:
                await self._listen()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.connected.clear()
                wait = self.backoff[min(failures, len(self.backoff) - 1)]
                failures += 1
                summary = f"not hearing other replicas' changes: {str(exc) or type(exc).__name__}; retrying"
                if self.health is not None:
                    self.health.degraded(COMPONENT, summary, "check that the PostgreSQL server is up and reachable; "
                                         "long polls here learn of answers on other replicas late meanwhile")
                elif failures == 1:
                    log.warning("store: %s", summary)
                await asyncio.sleep(wait)

    async def _listen(self) -> None:
        """Connect, LISTEN, catch up after a gap, then keep the connection until it is lost
        (raises then)."""
        conn = await asyncpg.connect(self.dsn, **self.connect)
        lost = asyncio.Event()
        try:
            conn.add_termination_listener(lambda _c: lost.set())
            transport = getattr(conn, "_transport", None)  # asyncpg keeps it private
            self.coalescing = callable(getattr(transport, "pause_reading", None))
            self._transport = transport if self.coalescing else None
            schema = await conn.fetchval("SELECT current_schema()")
            await conn.add_listener(channel_of(str(schema)), self._notified)
            self.backend_pid = conn.get_server_pid()
            if self._listened:  # LISTEN is on again: now look for what happened meanwhile
                self.reconnects += 1
                await self._caught_up()
                log.info("store: listening for other replicas' changes again (reconnect %d)", self.reconnects)
            self._listened = True
            self.connected.set()
            if self.health is not None:
                self.health.ok(COMPONENT, "listening for other replicas' changes")
            while not lost.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lost.wait(), KEEPALIVE_S)
                if not lost.is_set():
                    await conn.fetchval("SELECT 1", timeout=CHECK_TIMEOUT_S)
            raise ConnectionError("the listening connection was closed")
        finally:
            self.connected.clear()
            self._transport = None
            if self._held is not None:
                self._held.cancel()
                self._held = None
            if not conn.is_closed():
                conn.terminate()  # the server ends the session (and its LISTEN) with it

    async def _caught_up(self) -> None:
        """After a gap: wake the waiters whose request closed meanwhile, re-read timers."""
        waited = self.sink.waited_ids()
        if waited:
            self.sink.changed_elsewhere(await self.closed_among(waited))
        self.sink.gap()

    @property
    def holding(self) -> bool:
        """Reading is paused now (notifications that arrive wait for the next read)."""
        return self._held is not None

    # notifications: queued by asyncpg's callback, handled a batch at a time -------------------
    def _notified(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        self.received += 1
        self._queue.append(payload)
        if not self._draining:  # every notification of this read is queued before the pass runs
            self._draining = True
            asyncio.get_running_loop().call_soon(self._drain)
        if self._held is None and self._transport is not None:
            self._hold(self._transport)

    def _hold(self, transport: asyncio.Transport) -> None:
        """Read the connection again only after `coalesce_s` (`coalesce_waited_s` while a long
        poll or a live view waits here): what arrives meanwhile waits in the socket and comes
        in one read (one wake-up for many notifications)."""
        if transport.is_closing():
            return
        transport.pause_reading()
        hold = self.last_hold = self.coalesce_waited_s if self.sink.anyone_waiting() else self.coalesce_s
        self._held = asyncio.get_running_loop().call_later(hold, self._read_again, transport)

    def _read_again(self, transport: asyncio.Transport) -> None:
        self._held = None
        if not transport.is_closing():
            transport.resume_reading()

    def _drain(self) -> None:
        """One pass: handle up to `batch` queued notifications; the rest in the next pass."""
        queue = self._queue
        payloads = [queue.popleft() for _ in range(min(len(queue), self.batch))]
        if queue:
            asyncio.get_running_loop().call_soon(self._drain)
        else:
            self._draining = False
        self.batches += 1
        try:
            self.handle(payloads)
        except Exception:  # a bug in a hook must not stop the notifications that follow
            log.exception("store: handling %d change notification(s) failed", len(payloads))
        finally:
            self.handled += len(payloads)

    def handle(self, payloads: Sequence[str]) -> None:
        """What a batch of notifications means, told to the sink in one call each: the requests
        that closed (any notification saying so: a close is final, so a later or forged "open"
        cannot hide it), and the latest instant of every other one named (notifications come
        in commit order)."""
        instants: dict[str, datetime | None] = {}
        closed: dict[str, None] = {}  # in commit order: waiters and streams hear closes as they happened
        bad: list[str] = []
        for payload in payloads:
            found = parse(payload)
            if found is None:
                bad.append(payload)
                continue
            request_id, is_open, at = found
            if is_open:
                instants[request_id] = at
            else:
                closed[request_id] = None
        if bad:
            self._malformed(bad)
        if not instants and not closed:
            return
        self.sink.changed_elsewhere(list(closed))
        instants.update(closed)
        self.sink.timers_elsewhere(instants)

    def _malformed(self, bad: list[str]) -> None:
        """Skip them, saying so at most once every MALFORMED_LOG_EVERY_S (a flood of forged
        notifications must not flood the log)."""
        self.malformed += len(bad)
        now = time.monotonic()
        if now - self._malformed_logged >= MALFORMED_LOG_EVERY_S:
            self._malformed_logged = now
            log.warning("store: ignoring %d malformed change notification(s) (%d since start; not from a "
                        "hitl-bridge trigger: who else NOTIFYs on this channel?), the first: %r",
                        len(bad), self.malformed, bad[0][:200])
