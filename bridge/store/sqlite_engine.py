"""The SQLite store's engine on aiosqlite: WAL, one connection, one thread hop per transaction.

Every method runs as a single function in aiosqlite's connection thread inside
`BEGIN IMMEDIATE … COMMIT`, so it is atomic against this process and against other
processes on the same file (the CLI), and costs one hop instead of one per statement.
Reads run on a connection of their own (read-only, its own thread): WAL lets them see the
last commit while a write is under way, so a slow list never holds up intake.
Faults of the file under it (full, read-only, deleted, replaced) are raised as
`StoreFull` / `StoreUnavailable` and reported to the health registry
(`bridge.store.sqlite_faults`); the WAL is kept small (`bridge.store.sqlite_wal`).

URL: `sqlite:///path/to/bridge.db`, optionally `?max_size=2GiB` (the database refuses to
grow beyond it: "store full" instead of a full disk).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sqlite3
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar

import aiosqlite

from bridge.health import Check
from bridge.store import sqlite_chain, sqlite_faults, sqlite_follow, sqlite_wal
from bridge.store.base import (
    ChangeSink,
    StoreError,
    StoreFull,
    StoreUnavailable,
)
from bridge.store.sqlite_faults import FileGuard, fault_of, open_error
from bridge.store.sqlite_rows import (
    SQLiteSteps,
    migrate,
    parse_size,
)
from bridge.store.transactions import TransactionalStore, Txn, drive

T = TypeVar("T")
log = logging.getLogger("hitl_bridge.store")
PROBE_EVERY_S = 5.0  # the store checks itself this often (logs a change even when nobody asks)
TRUSTED_FOR_S = 60.0  # a commit this recent proves writes work: the probe need not write itself

Outcome = tuple[asyncio.Future[Any], Any, BaseException | None]


class SQLiteEngine(TransactionalStore):
    """See the module docstring; writes are group-committed (`_run`). The SQL is `SQLiteStore`'s."""

    def __init__(self, path: str | Path, *, max_size: int | None = None) -> None:
        self.path = Path(path)
        self.max_size = max_size
        self.guard = FileGuard(self.path)
        self._name = str(self.path)  # for the WAL's size, checked before every commit
        self._db: aiosqlite.Connection | None = None
        self._queue: deque[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = deque()
        self._flush_scheduled = False
        self._checkpointer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None  # reads; None in memory (one database per connection)
        self._upkeep: list[asyncio.Task[None]] = []
        self._committed_at = 0.0  # monotonic time of the last successful commit
        self._fault: StoreError | None = None  # the last fault, until a probe finds the store well
        self._version: int | None = None  # SQLite's data_version at the last write: another process wrote if it moved
        self.commits = 0  # write transactions committed, and the writes (`_run` calls) they held: on /metrics
        self.writes = 0

    @classmethod
    def from_url(cls, url: str) -> Self:
        path, _, query = url.removeprefix("sqlite:///").partition("?")
        options = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        max_size = options.pop("max_size", None)
        if options:
            raise StoreError(f"unknown store url option(s) {sorted(options)}: sqlite:/// takes max_size only")
        try:
            size = parse_size(max_size) if max_size is not None else None
        except ValueError as exc:
            raise StoreError(f"store url option max_size: {exc}") from None
        return cls(path, max_size=size)

    @property
    def in_memory(self) -> bool:
        return str(self.path) == ":memory:"

    async def open(self) -> None:
        try:
            if not self.in_memory:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = await aiosqlite.connect(str(self.path), isolation_level=None, timeout=30,
                                               factory=sqlite_chain.WriterConnection)
            for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=30000", "foreign_keys=ON",
                           f"journal_size_limit={sqlite_wal.SOFT_LIMIT}"):
                await self._db.execute(f"PRAGMA {pragma}")
            if self.max_size is not None:
                [(page_size,)] = list(await self._db.execute_fetchall("PRAGMA page_size"))
                await self._db.execute(f"PRAGMA max_page_count={max(1, self.max_size // page_size)}")
            await self._run(migrate)
            if self.in_memory:
                return
            self.guard.remember()
            # Checkpoints (the only step that fsyncs in WAL mode) run on a second connection
            # in its own thread, so a commit never waits ~30 ms for one on the hot path.
            await self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._checkpointer = await aiosqlite.connect(str(self.path), isolation_level=None, timeout=30)
            await sqlite_wal.prepare(self._checkpointer)
            self._reader = await aiosqlite.connect(str(self.path), isolation_level=None, timeout=30)
            for pragma in ("query_only=ON", "busy_timeout=30000"):
                await self._reader.execute(f"PRAGMA {pragma}")
        except BaseException as exc:
            await self.close()  # don't leak aiosqlite's threads when the file or schema is refused
            if isinstance(exc, sqlite3.Error | OSError | StoreFull | StoreUnavailable):
                raise open_error(exc, self.path) from None
            raise  # a schema from a newer bridge, a cancelled start...
        self._upkeep = [
            asyncio.create_task(sqlite_wal.keep_small(self._checkpointer, self.path, self._checkpoint_failed)),
            asyncio.create_task(self._watch_loop()),
        ]

    async def close(self) -> None:
        for task in self._upkeep:
            task.cancel()
        for task in self._upkeep:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._upkeep = []
        if self._reader is not None:
            await self._reader.close()
            self._reader = None
        if self._checkpointer is not None:
            with contextlib.suppress(sqlite3.Error):
                await self._checkpointer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            await self._checkpointer.close()
            self._checkpointer = None
        if self._db is not None:
            await self._db.close()
            self._db = None

    # changes by other processes ----------------------------------------------------------------
    def follow(self, sink: ChangeSink) -> None:
        if self.in_memory or self._db is None:
            return  # nobody else can write to it
        self._upkeep.append(asyncio.create_task(
            sqlite_follow.follow(self.data_version, self.closed_among, sink), name="store:follow"))

    async def data_version(self) -> int:
        """SQLite's data version as seen by the writing connection: it changes when another
        connection (another process) commits, never for this connection's own commits."""
        db = self._db
        if db is None:
            raise StoreError("store is not open")
        row = await db._execute(lambda: db._conn.execute("PRAGMA data_version").fetchone())
        return int(row[0])

    async def transact(self, txn: Txn[T], *, one_statement: bool = False) -> T:
        return await self._run(lambda conn: drive(txn, SQLiteSteps(conn)))

    async def closed_among(self, request_ids: Sequence[str]) -> list[str]:
        """Looked up by primary key, 500 at a time (one hop each: writes queued meanwhile go
        in between), never by scanning every open row."""
        ids = list(request_ids)
        found: list[str] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            sql = f"SELECT id, state FROM requests WHERE id IN ({','.join('?' * len(chunk))})"
            rows = await self._read(functools.partial(_fetch_all, sql, chunk))
            still_open = {i for i, state in rows if state in _OPEN_STATES}
            found.extend(i for i in chunk if i not in still_open)
        return found

    # health -----------------------------------------------------------------------------
    async def check(self) -> Check:
        """The probe `/readyz` and `doctor` run: when no commit proved it lately, it writes."""
        return await self._probe(idle_counts=True)

    async def _probe(self, *, idle_counts: bool) -> Check:
        db = self._db
        if db is None:
            raise StoreError("store is not open")
        doubt = self._fault is not None or (idle_counts and time.monotonic() - self._committed_at > TRUSTED_FOR_S)
        result = await db._execute(lambda: sqlite_faults.probe(db._conn, self.guard, test_commit=doubt))
        if result.ok:
            self._fault = None
        return result

    async def _watch_loop(self) -> None:
        """Run the probe now and then, so that a fault (or the recovery from one) is
        logged even when nobody reads /readyz."""
        while True:
            await asyncio.sleep(PROBE_EVERY_S)
            if self.health is None:
                continue
            try:  # an idle daemon writes nothing here: the write test is for recovering from a fault
                found = await self._probe(idle_counts=False)
            except Exception as exc:  # a bug in the probe must not end the loop
                log.warning("store self-check failed: %s", exc)
                continue
            self.health.report(found.component, found.status, found.summary, found.fix)

    def _checkpoint_failed(self, exc: sqlite3.Error) -> None:
        if sqlite_faults.is_busy(exc):
            return  # a reader or writer in the way: the next round tries again
        fault = fault_of(exc, self.path)
        if fault is None:
            log.warning("WAL checkpoint failed: %s", exc)
            return
        self._note_fault(fault)

    def _note_fault(self, fault: StoreError) -> None:
        self._fault = fault
        self.report_fault(fault)

    # transactions -------------------------------------------------------------------------
    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` in its own transaction — group-committed with whatever else is queued.

        Concurrent writers (16 intake clients, posts, answers) are drained by one hop into
        aiosqlite's thread and committed together: each `fn` runs inside a SAVEPOINT, so a
        failing one rolls back alone and raises to its own caller only — unless the
        failure is a fault of the file (full, I/O), which fails the whole batch."""
        db = self._db
        if db is None:
            raise StoreError("store is not open")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.append((fn, future))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            flushing = asyncio.ensure_future(db._execute(self._flush, db, loop))
            flushing.add_done_callback(_log_flush_failure)
        return await future

    def _flush(self, db: aiosqlite.Connection, loop: asyncio.AbstractEventLoop) -> None:
        self._flush_scheduled = False  # before draining: a later append schedules its own flush
        batch: list[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = []
        while self._queue:
            batch.append(self._queue.popleft())
        if not batch:
            return
        conn = db._conn  # the sqlite3 connection owned by aiosqlite's thread
        outcomes: list[Outcome] = []
        try:
            lost = self.guard.verify(conn)
            if lost is not None:
                raise lost  # never acknowledge a write into a file that is no longer there
            if sqlite_wal.over_hard_limit(self._name):
                sqlite_wal.truncate_now(conn)
            conn.execute("BEGIN IMMEDIATE")
            self._note_version(conn)
            if len(batch) == 1:  # alone in its transaction: a failure rolls back the transaction
                fn, future = batch[0]
                outcomes.append((future, fn(conn), None))
            else:
                outcomes = [self._one(conn, fn, future) for fn, future in batch]
            conn.execute("COMMIT")
            self._committed_at = time.monotonic()
            self.commits += 1
            self.writes += len(batch)
        except Exception as exc:  # the transaction failed: nobody's change is stored
            sqlite_chain.forget_head(conn)
            with contextlib.suppress(sqlite3.Error):
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            error = fault_of(exc, self.path) or exc
            outcomes = [(future, None, error) for _fn, future in batch]
        loop.call_soon_threadsafe(self._settle, outcomes)

    def _one(self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], Any],
             future: asyncio.Future[Any]) -> Outcome:
        """One of a batch, inside a SAVEPOINT: its failure rolls back its own changes only."""
        conn.execute("SAVEPOINT one")
        try:
            result = fn(conn)
        except Exception as exc:
            if not conn.in_transaction or fault_of(exc, self.path) is not None:
                raise  # SQLite may have rolled the whole transaction back: fail it all
            sqlite_chain.forget_head(conn)  # its appends are undone
            conn.execute("ROLLBACK TO one")
            conn.execute("RELEASE one")
            return future, None, exc
        conn.execute("RELEASE one")
        return future, result, None

    def _note_version(self, conn: sqlite3.Connection) -> None:
        """Inside the write lock: when another process committed since this one last wrote (the
        CLI appends events too), the chain head this connection remembers may be stale."""
        (version,) = conn.execute("PRAGMA data_version").fetchone()
        if version != self._version:
            sqlite_chain.forget_head(conn)
            self._version = version

    def _settle(self, outcomes: list[Outcome]) -> None:
        fault = next((e for _f, _r, e in outcomes if isinstance(e, StoreError)), None)
        if fault is not None:
            self._note_fault(fault)
        for future, result, error in outcomes:
            if future.done():  # the caller was cancelled meanwhile
                continue
            if isinstance(error, StoreError):
                future.set_exception(type(error)(str(error), error.fix))  # one instance per caller
            elif error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

    async def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` on the read connection, in one read transaction (one snapshot of the last
        commit); every write acknowledged before the call is in it."""
        db = self._reader or self._db
        if db is None or self._db is None:
            raise StoreError("store is not open")
        try:
            return await db._execute(lambda: _snapshot(db._conn, fn))
        except (sqlite3.Error, OSError) as exc:
            fault = fault_of(exc, self.path)
            if fault is None:
                raise
            self._note_fault(fault)
            raise fault from None


_OPEN_STATES = frozenset({"pending", "posted"})


def _fetch_all(sql: str, args: Sequence[Any], conn: sqlite3.Connection) -> list[Any]:
    return conn.execute(sql, args).fetchall()


def _snapshot(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    if conn.in_transaction:  # the write connection (an in-memory store): its own transactions
        return fn(conn)
    conn.execute("BEGIN")
    try:
        return fn(conn)
    finally:
        conn.execute("COMMIT")


def _log_flush_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("store flush failed: %s", task.exception())

