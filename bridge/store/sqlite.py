"""SQLite store on aiosqlite: WAL, one connection, one thread hop per transaction.

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
import json
import logging
import sqlite3
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from bridge.health import Check
from bridge.models import Answer, Event, Post, Request, RequestState
from bridge.store import sqlite_faults, sqlite_follow, sqlite_wal
from bridge.store.base import (
    ChangeSink,
    OutboxItem,
    OutboxStats,
    Store,
    StoreError,
    StoreFull,
    StoreUnavailable,
    TimerRow,
    Vote,
    claim_holds,
)
from bridge.store.codec import STUCK_DELIVERED, load_request, move, parse_ts, request_columns, ts
from bridge.store.query import RequestQuery, is_plain, sqlite_page, sqlite_where
from bridge.store.sqlite_faults import FileGuard, fault_of, open_error
from bridge.store.sqlite_rows import (
    INSERT_OUTBOX,
    INSERT_REQUEST,
    OUTBOX_COLUMNS,
    PRUNABLE,
    insert_event,
    migrate,
    outbox_item,
    parse_size,
    write,
)

T = TypeVar("T")
log = logging.getLogger("hitl_bridge.store")
PROBE_EVERY_S = 5.0  # the store checks itself this often (logs a change even when nobody asks)
TRUSTED_FOR_S = 60.0  # a commit this recent proves writes work: the probe need not write itself

Outcome = tuple[asyncio.Future[Any], Any, BaseException | None]


class SQLiteStore(Store):
    """See the module docstring; writes are group-committed (`_run`)."""

    def __init__(self, path: str | Path, *, max_size: int | None = None) -> None:
        self.path = Path(path)
        self.max_size = max_size
        self.guard = FileGuard(self.path)
        self._db: aiosqlite.Connection | None = None
        self._queue: deque[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = deque()
        self._flush_scheduled = False
        self._checkpointer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None  # reads; None in memory (one database per connection)
        self._upkeep: list[asyncio.Task[None]] = []
        self._committed_at = 0.0  # monotonic time of the last successful commit
        self._fault: StoreError | None = None  # the last fault, until a probe finds the store well

    @classmethod
    def from_url(cls, url: str) -> SQLiteStore:
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
            self._db = await aiosqlite.connect(str(self.path), isolation_level=None, timeout=30)
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
            if sqlite_wal.over_hard_limit(self.path):
                sqlite_wal.truncate_now(conn)
            conn.execute("BEGIN IMMEDIATE")
            for fn, future in batch:
                conn.execute("SAVEPOINT one")
                try:
                    result = fn(conn)
                except Exception as exc:
                    if not conn.in_transaction or fault_of(exc, self.path) is not None:
                        raise  # SQLite may have rolled the whole transaction back: fail it all
                    conn.execute("ROLLBACK TO one")
                    conn.execute("RELEASE one")
                    outcomes.append((future, None, exc))
                else:
                    conn.execute("RELEASE one")
                    outcomes.append((future, result, None))
            conn.execute("COMMIT")
            self._committed_at = time.monotonic()
        except Exception as exc:  # the transaction failed: nobody's change is stored
            with contextlib.suppress(sqlite3.Error):
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            error = fault_of(exc, self.path) or exc
            outcomes = [(future, None, error) for _fn, future in batch]
        loop.call_soon_threadsafe(self._settle, outcomes)

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

    # requests -----------------------------------------------------------------------
    async def create_request(self, request: Request, event: Event | None = None) -> tuple[Request, bool]:
        cols = request_columns(request)

        def txn(conn: sqlite3.Connection) -> tuple[Request, bool]:
            if request.external_id is not None:
                row = conn.execute(
                    "SELECT body FROM requests WHERE source=? AND created_by=? AND external_id=?",
                    (request.source, request.created_by or "", request.external_id),
                ).fetchone()
                if row:
                    return load_request(row[0]), False
            conn.execute(INSERT_REQUEST, cols)
            if event is not None:
                insert_event(conn, event)
            return request, True

        return await self._run(txn)

    async def get_request(self, request_id: str) -> Request | None:
        def txn(conn: sqlite3.Connection) -> Request | None:
            row = conn.execute("SELECT body FROM requests WHERE id=?", (request_id,)).fetchone()
            return load_request(row[0]) if row else None

        return await self._read(txn)

    async def find_by_external_id(self, source: str, external_id: str,
                                  created_by: str | None = None) -> Request | None:
        def txn(conn: sqlite3.Connection) -> Request | None:
            row = conn.execute(
                "SELECT body FROM requests WHERE source=? AND created_by=? AND external_id=?",
                (source, created_by or "", external_id),
            ).fetchone()
            return load_request(row[0]) if row else None

        return await self._read(txn)

    async def count_by_state(self) -> dict[str, int]:
        return await self._read(_counts)

    async def find_requests(self, query: RequestQuery, *, limit: int = 100, offset: int = 0) -> list[Request]:
        sql, args = sqlite_page(query, limit=limit, offset=offset)

        def txn(conn: sqlite3.Connection) -> list[Request]:
            ids = [r[0] for r in conn.execute(sql, args)]
            bodies: dict[str, str] = {}
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                bodies.update(conn.execute(f"SELECT id, body FROM requests WHERE id IN ({','.join('?' * len(chunk))})",
                                           chunk).fetchall())
            return [load_request(bodies[i]) for i in ids if i in bodies]

        return await self._read(txn)

    async def count_requests(self, query: RequestQuery) -> dict[str, int]:
        if is_plain(query):
            return await self._read(lambda c: _plain_counts(c, query))
        where, args = sqlite_where(query)
        sql = "SELECT state, COUNT(*) FROM requests" + (" WHERE " + " AND ".join(where) if where else "")
        rows = await self._read(lambda c: c.execute(sql + " GROUP BY state", args).fetchall())
        return {state: n for state, n in rows}

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
        def txn(conn: sqlite3.Connection) -> Request | None:
            request = _locked(conn, request_id)
            if request is None or request.state not in from_states:
                return None
            move(request, to_state, now, answer=answer, error=error)
            write(conn, request)
            if event is not None:
                insert_event(conn, event)
            if enqueue is not None:
                conn.execute(INSERT_OUTBOX, {"rid": request_id, "state": enqueue, "due": ts(now), "created": ts(now)})
            return request

        return await self._run(txn)

    async def modify_request(self, request_id: str, change: Callable[[Request], bool], *, now: datetime,
                             events: Sequence[Event] = ()) -> Request | None:
        def txn(conn: sqlite3.Connection) -> Request | None:
            request = _locked(conn, request_id)
            if request is None or not change(request):
                return None
            request.updated_at = now
            write(conn, request)
            for event in events:
                insert_event(conn, event)
            return request

        return await self._run(txn)

    async def update_request(self, request_id: str, *, now: datetime, expect: Mapping[str, Any] | None = None,
                             **fields: Any) -> Request | None:
        def txn(conn: sqlite3.Connection) -> Request | None:
            request = _locked(conn, request_id)
            if request is None or not claim_holds(request, expect):
                return None
            for key, value in fields.items():
                setattr(request, key, value)
            request.updated_at = now
            write(conn, request)
            return request

        return await self._run(txn)

    # audit ----------------------------------------------------------------------------
    async def add_event(self, request_id: str, kind: str, actor: str, data: dict[str, Any], at: datetime) -> None:
        event = Event(id=0, request_id=request_id, at=at, kind=kind, actor=actor, data=data)
        await self._run(lambda c: insert_event(c, event))

    async def list_events(self, request_id: str) -> list[Event]:
        def txn(conn: sqlite3.Connection) -> list[Event]:
            rows = conn.execute(
                "SELECT id, request_id, at, kind, actor, data FROM events WHERE request_id=? ORDER BY id",
                (request_id,),
            ).fetchall()
            return [
                Event(id=r[0], request_id=r[1], at=r[2], kind=r[3], actor=r[4], data=json.loads(r[5]))
                for r in rows
            ]

        return await self._read(txn)

    # posts ------------------------------------------------------------------------------
    async def add_post(self, post: Post) -> None:
        await self._run(
            lambda c: c.execute(
                "INSERT INTO posts (request_id, channel, target, ref, ok, error, at) VALUES (?,?,?,?,?,?,?)",
                (post.request_id, post.channel, post.target, json.dumps(post.ref), int(post.ok),
                 post.error, ts(post.at)),
            )
        )

    async def record_posts(self, request_id: str, posts: list[Post], events: list[Event], *,
                           now: datetime) -> Request | None:
        def txn(conn: sqlite3.Connection) -> Request | None:
            conn.executemany(
                "INSERT INTO posts (request_id, channel, target, ref, ok, error, at) VALUES (?,?,?,?,?,?,?)",
                [(p.request_id, p.channel, p.target, json.dumps(p.ref), int(p.ok), p.error, ts(p.at))
                 for p in posts],
            )
            row = conn.execute("SELECT state, body FROM requests WHERE id=?", (request_id,)).fetchone()
            if row is None or row[0] not in ("pending", "posted"):
                return None  # closed meanwhile: the copies are kept (to be updated), no `posted` after the close
            for event in events:
                insert_event(conn, event)
            if not any(p.ok for p in posts) or row[0] != "pending":
                return None
            request = load_request(row[1])
            request.state = RequestState.posted
            request.updated_at = now
            write(conn, request)
            return request

        return await self._run(txn)

    async def list_posts(self, request_id: str, channel: str | None = None) -> list[Post]:
        sql = "SELECT request_id, channel, target, ref, ok, error, at FROM posts WHERE request_id=?"
        args: list[Any] = [request_id]
        if channel:
            sql += " AND channel=?"
            args.append(channel)
        rows = await self._read(lambda c: c.execute(sql + " ORDER BY id", args).fetchall())
        return [
            Post(request_id=r[0], channel=r[1], target=r[2], ref=json.loads(r[3]), ok=bool(r[4]),
                 error=r[5], at=r[6])
            for r in rows
        ]

    # outbox -----------------------------------------------------------------------------
    async def enqueue(self, request_id: str, state: str, due_at: datetime) -> int:
        def txn(conn: sqlite3.Connection) -> int:
            cur = conn.execute(INSERT_OUTBOX, {"rid": request_id, "state": state, "due": ts(due_at),
                                               "created": ts(due_at)})
            return int(cur.lastrowid or 0)

        return await self._run(txn)

    async def claim_due(self, now: datetime, limit: int, lease_s: float) -> list[OutboxItem]:
        lease_until = ts(now + timedelta(seconds=lease_s))

        def txn(conn: sqlite3.Connection) -> list[OutboxItem]:
            rows = conn.execute(
                f"SELECT {OUTBOX_COLUMNS} FROM outbox WHERE done=0 AND dead=0 AND due_at<=? ORDER BY due_at LIMIT ?",
                (ts(now), limit),
            ).fetchall()
            if rows:
                conn.executemany("UPDATE outbox SET due_at=? WHERE id=?", [(lease_until, r[0]) for r in rows])
            return [outbox_item(r) for r in rows]

        return await self._run(txn)

    async def outbox_done(self, item_id: int) -> None:
        await self._run(lambda c: c.execute("UPDATE outbox SET done=1 WHERE id=?", (item_id,)))

    async def finish_delivery(self, item_id: int, request_id: str, *, event: Event, now: datetime,
                              answer: Answer | None = None) -> Request | None:
        def txn(conn: sqlite3.Connection) -> Request | None:
            conn.execute("UPDATE outbox SET done=1 WHERE id=?", (item_id,))
            insert_event(conn, event)
            request = _locked(conn, request_id)
            if request is None:
                return None
            moved = request.answer is not None and request.state in _DELIVERABLE
            if moved:
                move(request, RequestState.delivered, now)
            if answer is not None:
                request.answer = answer
            if moved or answer is not None:
                request.updated_at = now
                write(conn, request)
            return request if moved else None

        return await self._run(txn)

    async def heal_deliveries(self, now: datetime) -> list[str]:
        # found on the read connection (an expired request with no answer stays `expired` for
        # good: there may be many, and no write waits meanwhile), then each re-checked in the write
        found = await self._read(lambda c: [r[0] for r in c.execute(
            f"{STUCK_DELIVERED} AND json_type(body, '$.answer') = 'object'")])

        def txn(conn: sqlite3.Connection) -> list[str]:
            healed = []
            for request_id in found:
                if conn.execute(f"{STUCK_DELIVERED} AND id=?", (request_id,)).fetchone() is None:
                    continue
                request = _locked(conn, request_id)
                if request is None or request.answer is None:
                    continue
                before = request.state.value
                move(request, RequestState.delivered, now)
                write(conn, request)
                insert_event(conn, Event(id=0, request_id=request_id, at=now, kind="delivered", actor="bridge",
                                         data={"outcome": before, "healed": True}))
                healed.append(request_id)
            return healed

        return await self._run(txn) if found else []

    async def outbox_stats(self) -> OutboxStats:
        def txn(conn: sqlite3.Connection) -> OutboxStats:
            pending, dead = conn.execute(
                "SELECT COALESCE(SUM(dead=0), 0), COALESCE(SUM(dead=1), 0) FROM outbox WHERE done=0").fetchone()
            failing = conn.execute(  # ix_outbox_failing: the index alone answers
                "SELECT source, COUNT(*) FROM outbox INDEXED BY ix_outbox_failing "
                "WHERE done=0 AND dead=0 AND attempts>0 GROUP BY source").fetchall()
            return OutboxStats(pending=pending, dead=dead, failing={source or "-": n for source, n in failing})

        return await self._read(txn)

    async def outbox_retry(self, item_id: int, *, attempts: int, due_at: datetime, error: str) -> None:
        await self._run(
            lambda c: c.execute(
                "UPDATE outbox SET attempts=?, due_at=?, last_error=? WHERE id=?",
                (attempts, ts(due_at), error, item_id),
            )
        )

    async def outbox_dead(self, item_id: int, *, error: str) -> None:
        await self._run(
            lambda c: c.execute("UPDATE outbox SET dead=1, last_error=? WHERE id=?", (error, item_id))
        )

    async def list_outbox(self, *, dead: bool | None = None, request_id: str | None = None) -> list[OutboxItem]:
        sql = f"SELECT {OUTBOX_COLUMNS} FROM outbox WHERE done=0"
        args: list[Any] = []
        if dead is not None:
            sql += " AND dead=?"
            args.append(int(dead))
        if request_id is not None:
            sql += " AND request_id=?"
            args.append(request_id)
        rows = await self._read(lambda c: c.execute(sql + " ORDER BY id", args).fetchall())
        return [outbox_item(r) for r in rows]

    async def next_outbox_due(self) -> datetime | None:
        row = await self._read(
            lambda c: c.execute("SELECT MIN(due_at) FROM outbox WHERE done=0 AND dead=0").fetchone()
        )
        return parse_ts(row[0]) if row and row[0] else None

    # votes ------------------------------------------------------------------------------
    async def add_vote(self, vote: Vote) -> bool:
        def txn(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "INSERT OR IGNORE INTO votes (request_id, voter, value, name, at) VALUES (?,?,?,?,?)",
                (vote.request_id, vote.voter, vote.value, vote.name, ts(vote.at)),
            )
            return cur.rowcount == 1

        return await self._run(txn)

    async def list_votes(self, request_id: str) -> list[Vote]:
        rows = await self._read(
            lambda c: c.execute(
                "SELECT request_id, voter, value, name, at FROM votes WHERE request_id=? ORDER BY at",
                (request_id,),
            ).fetchall()
        )
        return [Vote(r[0], r[1], r[2], r[3], datetime.fromisoformat(r[4])) for r in rows]

    # kv ---------------------------------------------------------------------------------
    async def kv_put(self, namespace: str, key: str, value: dict[str, Any], expires_at: datetime | None = None) -> None:
        await self._run(
            lambda c: c.execute(
                "INSERT INTO kv (namespace, key, value, expires_at) VALUES (?,?,?,?) "
                "ON CONFLICT(namespace, key) DO UPDATE SET value=excluded.value, expires_at=excluded.expires_at",
                (namespace, key, json.dumps(value), ts(expires_at)),
            )
        )

    async def kv_get(self, namespace: str, key: str, now: datetime | None = None) -> dict[str, Any] | None:
        row = await self._read(
            lambda c: c.execute(
                "SELECT value, expires_at FROM kv WHERE namespace=? AND key=?", (namespace, key)
            ).fetchone()
        )
        if not row:
            return None
        if now is not None and row[1] is not None and row[1] < (ts(now) or ""):
            return None
        value: dict[str, Any] = json.loads(row[0])
        return value

    async def kv_delete(self, namespace: str, key: str) -> bool:
        return await self._run(
            lambda c: c.execute("DELETE FROM kv WHERE namespace=? AND key=?", (namespace, key)).rowcount > 0
        )

    async def kv_items(self, namespace: str, now: datetime | None = None) -> list[tuple[str, dict[str, Any]]]:
        rows = await self._read(
            lambda c: c.execute(
                "SELECT key, value FROM kv WHERE namespace=? AND (expires_at IS NULL OR ? IS NULL "
                "OR expires_at>=?) ORDER BY key", (namespace, ts(now), ts(now)),
            ).fetchall()
        )
        return [(str(key), json.loads(value)) for key, value in rows]

    # timers -----------------------------------------------------------------------------
    async def list_timed(self) -> list[Request]:
        sql = "SELECT body FROM requests WHERE next_at IS NOT NULL ORDER BY next_at, id"
        return await self._read(lambda c: [load_request(r[0]) for r in c.execute(sql)])

    async def timer_rows(self, *, after: tuple[datetime, str] | None = None, limit: int = 5000) -> list[TimerRow]:
        sql = "SELECT id, next_at, resume FROM requests INDEXED BY ix_requests_next WHERE next_at IS NOT NULL"
        args: list[Any] = []
        if after is not None:
            sql += " AND (next_at, id) > (?, ?)"
            args = [ts(after[0]), after[1]]
        sql += " ORDER BY next_at, id LIMIT ?"
        args.append(limit)
        rows = await self._read(lambda c: c.execute(sql, args).fetchall())
        return [TimerRow(r[0], datetime.fromisoformat(r[1]), bool(r[2])) for r in rows]

    async def timers_due(self, before: datetime) -> list[tuple[str, datetime]]:
        sql = "SELECT id, next_at FROM requests WHERE next_at IS NOT NULL AND next_at <= ? ORDER BY next_at"
        return await self._read(lambda c: [(r[0], datetime.fromisoformat(r[1])) for r in c.execute(sql, (ts(before),))])

    # retention --------------------------------------------------------------------------
    async def prune_closed(self, before: datetime, *, limit: int = 500) -> int:
        def txn(conn: sqlite3.Connection) -> int:
            ids = [r[0] for r in conn.execute(PRUNABLE, {"before": ts(before), "limit": limit})]
            if ids:
                marks = ",".join("?" * len(ids))
                for table in ("events", "posts", "votes", "outbox"):
                    conn.execute(f"DELETE FROM {table} WHERE request_id IN ({marks})", ids)
                conn.execute(f"DELETE FROM requests WHERE id IN ({marks})", ids)
            return len(ids)

        return await self._run(txn)


_DELIVERABLE = frozenset({RequestState.answered, RequestState.expired})
_OPEN_STATES = frozenset({"pending", "posted"})


def _fetch_all(sql: str, args: Sequence[Any], conn: sqlite3.Connection) -> list[Any]:
    return conn.execute(sql, args).fetchall()


def _locked(conn: sqlite3.Connection, request_id: str) -> Request | None:
    """The request as stored (the transaction is BEGIN IMMEDIATE: nobody else writes meanwhile)."""
    row = conn.execute("SELECT body FROM requests WHERE id=?", (request_id,)).fetchone()
    return load_request(row[0]) if row else None


def _snapshot(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    if conn.in_transaction:  # the write connection (an in-memory store): its own transactions
        return fn(conn)
    conn.execute("BEGIN")
    try:
        return fn(conn)
    finally:
        conn.execute("COMMIT")


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    rows = conn.execute("SELECT state, SUM(n) FROM request_counts GROUP BY state HAVING SUM(n) <> 0").fetchall()
    return {state: int(n) for state, n in rows}


def _plain_counts(conn: sqlite3.Connection, query: RequestQuery) -> dict[str, int]:
    """By state from the kept counts, less the requests one of `query.not_voted_by` voted on."""
    wanted = {s.value for s in query.states}
    counts = {s: n for s, n in _counts(conn).items() if not wanted or s in wanted}
    if query.not_voted_by and counts:  # CROSS JOIN: from the votes of these voters (ix_votes_voter), never
        voters = sorted(set(query.not_voted_by))  # from every request in a state
        states = sorted(counts)
        voted = conn.execute(
            "SELECT r.state, COUNT(DISTINCT r.id) FROM votes v CROSS JOIN requests r ON r.id = v.request_id "
            f"WHERE v.voter IN ({','.join('?' * len(voters))}) AND r.state IN ({','.join('?' * len(states))}) "
            "GROUP BY r.state", [*voters, *states]).fetchall()
        for state, n in voted:
            counts[state] -= n
    return {s: n for s, n in counts.items() if n}


def _log_flush_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("store flush failed: %s", task.exception())
