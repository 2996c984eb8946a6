"""Replicas wake each other: PostgreSQL LISTEN/NOTIFY on a connection of its own.

A trigger on `requests` (schema_postgres.sql, `hitl_bridge_notify`) calls `pg_notify` for
every inserted or updated row, inside the writing transaction: PostgreSQL delivers it at
commit, and never for a rolled-back change, so a notification means committed. The payload
is `state<TAB>next timer instant (epoch seconds, empty: none)<TAB>id`; the channel is
`hitl_bridge.<schema>` (bridges in other schemas of the database do not hear each other).

Each daemon keeps one listening connection. A notification pokes the waiters of that request
(they read it again) and hands its next timer instant to the scheduler (`Scheduler.touch`):
no read at all when nobody waits on it. When the connection is lost (server restart, a
killed backend, a network cut), the follower says so (log + health `store:changes`,
degraded: answers still work, waiters on this replica just learn of other replicas'
changes late), reconnects with backoff, LISTENs again and only then re-checks what it may
have missed: which waited requests closed meanwhile, and the timers due soon (`gap`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
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
    except ValueError:
        return None
    return decode_text(request_id), state in OPEN, at


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
        self.received = 0
        self._listened = False
        self.backoff: tuple[float, ...] = BACKOFF_S  # waits between reconnection attempts (the last one repeats)

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
            if not conn.is_closed():
                conn.terminate()  # the server ends the session (and its LISTEN) with it

    async def _caught_up(self) -> None:
        """After a gap: wake the waiters whose request closed meanwhile, re-read timers."""
        waited = self.sink.waited_ids()
        if waited:
            self.sink.changed_elsewhere(await self.closed_among(waited))
        self.sink.gap()

    def _notified(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        self.received += 1
        found = parse(payload)
        if found is None:
            log.warning("store: ignoring a malformed change notification %r", payload[:200])
            return
        request_id, is_open, at = found
        try:
            self.sink.changed_elsewhere((request_id,))
            self.sink.timer_elsewhere(request_id, at if is_open else None)
        except Exception:  # a bug in a hook must not stop the notifications that follow
            log.exception("store: handling the change notification of %s failed", request_id)
