"""SQLite store on aiosqlite: WAL, one connection, one thread hop per transaction.

Every method runs as a single function in aiosqlite's connection thread inside
`BEGIN IMMEDIATE … COMMIT`, so it is atomic against this process and against other
processes on the same file (the CLI), and costs one hop instead of one per statement.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
from collections import deque
from collections.abc import Callable, Mapping
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from bridge.models import Answer, Event, Post, Request, RequestState
from bridge.store.base import OutboxItem, Store, StoreError, Vote, claim_holds
from bridge.store.codec import SCHEMA_VERSION, load_request, parse_ts, request_columns, ts
from bridge.store.query import RequestQuery, sqlite_where

T = TypeVar("T")
CHECKPOINT_EVERY_S = 1.0
_COLUMNS = ("id, source, external_id, state, route, created_at, updated_at, deadline, "
            "next_reminder_at, next_escalation_at, body")


class SQLiteStore(Store):
    """See the module docstring; writes are group-committed (`_run`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db: aiosqlite.Connection | None = None
        self._queue: deque[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = deque()
        self._flush_scheduled = False
        self._checkpointer: aiosqlite.Connection | None = None
        self._checkpoints: asyncio.Task[None] | None = None

    @classmethod
    def from_url(cls, url: str) -> SQLiteStore:
        return cls(url.removeprefix("sqlite:///"))

    async def open(self) -> None:
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = await aiosqlite.connect(str(self.path), isolation_level=None, timeout=30)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=30000", "foreign_keys=ON"):
            await self._db.execute(f"PRAGMA {pragma}")
        try:
            await self._run(_migrate)
            # Checkpoints (the only step that fsyncs in WAL mode) run on a second connection
            # in its own thread, so a commit never waits ~30 ms for one on the hot path.
            await self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._checkpointer = await aiosqlite.connect(str(self.path), isolation_level=None, timeout=30)
            self._checkpoints = asyncio.create_task(self._checkpoint_loop(self._checkpointer))
        except BaseException:
            await self.close()  # don't leak aiosqlite's thread when the schema is refused
            raise

    async def _checkpoint_loop(self, conn: aiosqlite.Connection) -> None:
        wal = Path(f"{self.path}-wal")
        done_at: tuple[int, int] | None = None  # the WAL's (mtime, size) after the last checkpoint
        while True:
            await asyncio.sleep(CHECKPOINT_EVERY_S)
            now = _file_stamp(wal)
            if now is None or now == done_at:
                continue  # nothing written since: an idle daemon does no checkpoint work
            try:
                await conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:  # busy or I/O trouble: the next round tries again
                logging.getLogger("hitl_bridge.store").warning("WAL checkpoint failed: %s", exc)
                continue
            done_at = _file_stamp(wal)

    async def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checkpoints
            self._checkpoints = None
        if self._checkpointer is not None:
            with contextlib.suppress(sqlite3.Error):
                await self._checkpointer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            await self._checkpointer.close()
            self._checkpointer = None
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` in its own transaction — group-committed with whatever else is queued.

        Concurrent writers (16 intake clients, posts, answers) are drained by one hop into
        aiosqlite's thread and committed together: each `fn` runs inside a SAVEPOINT, so a
        failing one rolls back alone and raises to its own caller only."""
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
        outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for fn, future in batch:
                conn.execute("SAVEPOINT one")
                try:
                    result = fn(conn)
                except Exception as exc:
                    conn.execute("ROLLBACK TO one")
                    conn.execute("RELEASE one")
                    outcomes.append((future, None, exc))
                else:
                    conn.execute("RELEASE one")
                    outcomes.append((future, result, None))
            conn.execute("COMMIT")
        except Exception as exc:  # the commit itself failed: nobody's change is stored
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            outcomes = [(future, None, exc) for _fn, future in batch]
        loop.call_soon_threadsafe(_settle, outcomes)

    # requests -----------------------------------------------------------------------
    async def create_request(self, request: Request, event: Event | None = None) -> tuple[Request, bool]:
        cols = request_columns(request)

        def txn(conn: sqlite3.Connection) -> tuple[Request, bool]:
            if request.external_id is not None:
                row = conn.execute(
                    "SELECT body FROM requests WHERE source=? AND external_id=?",
                    (request.source, request.external_id),
                ).fetchone()
                if row:
                    return load_request(row[0]), False
            conn.execute(
                f"INSERT INTO requests ({_COLUMNS}) VALUES (:id, :source, :external_id, :state, "
                ":route, :created_at, :updated_at, :deadline, :next_reminder_at, "
                ":next_escalation_at, :body)",
                cols,
            )
            if event is not None:
                _insert_event(conn, event)
            return request, True

        return await self._run(txn)

    async def get_request(self, request_id: str) -> Request | None:
        def txn(conn: sqlite3.Connection) -> Request | None:
            row = conn.execute("SELECT body FROM requests WHERE id=?", (request_id,)).fetchone()
            return load_request(row[0]) if row else None

        return await self._read(txn)

    async def find_by_external_id(self, source: str, external_id: str) -> Request | None:
        def txn(conn: sqlite3.Connection) -> Request | None:
            row = conn.execute(
                "SELECT body FROM requests WHERE source=? AND external_id=?", (source, external_id)
            ).fetchone()
            return load_request(row[0]) if row else None

        return await self._read(txn)

    async def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        db = self._db
        if db is None:
            raise StoreError("store is not open")
        return await db._execute(lambda: fn(db._conn))

    async def list_requests(
        self,
        *,
        states: list[RequestState] | None = None,
        source: str | None = None,
        route: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Request]:
        where: list[str] = []
        args: list[Any] = []
        if states:
            where.append(f"state IN ({','.join('?' * len(states))})")
            args.extend(s.value for s in states)
        if source:
            where.append("source=?")
            args.append(source)
        if route:
            where.append("route=?")
            args.append(route)
        sql = "SELECT body FROM requests"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        args.extend([min(limit, 2**62), min(offset, 2**62)])  # any int from the API fits in SQLite
        return await self._read(lambda c: [load_request(r[0]) for r in c.execute(sql, args)])

    async def count_by_state(self) -> dict[str, int]:
        rows = await self._read(
            lambda c: c.execute("SELECT state, COUNT(*) FROM requests GROUP BY state").fetchall()
        )
        return {state: n for state, n in rows}

    async def find_requests(self, query: RequestQuery, *, limit: int = 100, offset: int = 0) -> list[Request]:
        where, args = sqlite_where(query)
        sql = "SELECT body FROM requests" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        args.extend([min(max(limit, 0), 2**62), min(max(offset, 0), 2**62)])
        return await self._read(lambda c: [load_request(r[0]) for r in c.execute(sql, args)])

    async def count_requests(self, query: RequestQuery) -> dict[str, int]:
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
            row = conn.execute("SELECT body FROM requests WHERE id=?", (request_id,)).fetchone()
            if not row:
                return None
            request = load_request(row[0])
            if request.state not in from_states:
                return None
            request.state = to_state
            request.updated_at = now
            if answer is not None:
                request.answer = answer
            if error is not None:
                request.error = error
            if to_state not in (RequestState.pending, RequestState.posted):
                request.next_reminder_at = None
                request.next_escalation_at = None
            _write(conn, request)
            if event is not None:
                _insert_event(conn, event)
            if enqueue is not None:
                conn.execute(
                    "INSERT INTO outbox (request_id, state, due_at, created_at) VALUES (?,?,?,?)",
                    (request_id, enqueue, ts(now), ts(now)),
                )
            return request

        return await self._run(txn)

    async def update_request(self, request_id: str, *, now: datetime, expect: Mapping[str, Any] | None = None,
                             **fields: Any) -> Request | None:
        def txn(conn: sqlite3.Connection) -> Request | None:
            row = conn.execute("SELECT body FROM requests WHERE id=?", (request_id,)).fetchone()
            if not row:
                return None
            request = load_request(row[0])
            if not claim_holds(request, expect):
                return None
            for key, value in fields.items():
                setattr(request, key, value)
            request.updated_at = now
            _write(conn, request)
            return request

        return await self._run(txn)

    # audit ----------------------------------------------------------------------------
    async def add_event(self, request_id: str, kind: str, actor: str, data: dict[str, Any], at: datetime) -> None:
        event = Event(id=0, request_id=request_id, at=at, kind=kind, actor=actor, data=data)
        await self._run(lambda c: _insert_event(c, event))

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
            for event in events:
                _insert_event(conn, event)
            if not any(p.ok for p in posts):
                return None
            row = conn.execute("SELECT body FROM requests WHERE id=? AND state='pending'", (request_id,)).fetchone()
            if not row:
                return None
            request = load_request(row[0])
            request.state = RequestState.posted
            request.updated_at = now
            _write(conn, request)
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
            cur = conn.execute(
                "INSERT INTO outbox (request_id, state, due_at, created_at) VALUES (?,?,?,?)",
                (request_id, state, ts(due_at), ts(due_at)),
            )
            return int(cur.lastrowid or 0)

        return await self._run(txn)

    async def claim_due(self, now: datetime, limit: int, lease_s: float) -> list[OutboxItem]:
        from datetime import timedelta

        lease_until = ts(now + timedelta(seconds=lease_s))

        def txn(conn: sqlite3.Connection) -> list[OutboxItem]:
            rows = conn.execute(
                "SELECT id, request_id, state, attempts, due_at, created_at, last_error, dead "
                "FROM outbox WHERE done=0 AND dead=0 AND due_at<=? ORDER BY due_at LIMIT ?",
                (ts(now), limit),
            ).fetchall()
            if rows:
                conn.executemany("UPDATE outbox SET due_at=? WHERE id=?", [(lease_until, r[0]) for r in rows])
            return [_outbox_item(r) for r in rows]

        return await self._run(txn)

    async def outbox_done(self, item_id: int) -> None:
        await self._run(lambda c: c.execute("UPDATE outbox SET done=1 WHERE id=?", (item_id,)))

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
        sql = ("SELECT id, request_id, state, attempts, due_at, created_at, last_error, dead "
               "FROM outbox WHERE done=0")
        args: list[Any] = []
        if dead is not None:
            sql += " AND dead=?"
            args.append(int(dead))
        if request_id is not None:
            sql += " AND request_id=?"
            args.append(request_id)
        rows = await self._read(lambda c: c.execute(sql + " ORDER BY id", args).fetchall())
        return [_outbox_item(r) for r in rows]

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
        sql = (
            "SELECT body FROM requests WHERE state IN ('pending','posted') AND (deadline IS NOT NULL "
            "OR next_reminder_at IS NOT NULL OR next_escalation_at IS NOT NULL)"
        )
        return await self._read(lambda c: [load_request(r[0]) for r in c.execute(sql)])

    async def timers_due(self, before: datetime) -> list[tuple[str, datetime]]:
        never = "9999"  # sorts after every stored instant (fixed-width UTC text)
        sql = (
            "SELECT id, at FROM (SELECT id, min(coalesce(deadline, :never), coalesce(next_reminder_at, :never), "
            "coalesce(next_escalation_at, :never)) AS at FROM requests WHERE state IN ('pending','posted') "
            "AND (deadline IS NOT NULL OR next_reminder_at IS NOT NULL OR next_escalation_at IS NOT NULL)) "
            "WHERE at <= :before"
        )
        args = {"never": never, "before": ts(before)}
        return await self._read(lambda c: [(r[0], datetime.fromisoformat(r[1])) for r in c.execute(sql, args)])


def _file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _settle(outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for future, result, error in outcomes:
        if future.done():  # the caller was cancelled meanwhile
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


def _log_flush_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logging.getLogger("hitl_bridge.store").error("store flush failed: %s", task.exception())


def _migrate(conn: sqlite3.Connection) -> None:
    row = None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.OperationalError:
        pass
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the database schema is version {version}; this bridge knows {SCHEMA_VERSION}: upgrade hitl-bridge"
        )
    script = resources.files("bridge.store").joinpath("schema_sqlite.sql").read_text()
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
        "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
        (str(SCHEMA_VERSION),),
    )


def _write(conn: sqlite3.Connection, request: Request) -> None:
    cols = request_columns(request)
    conn.execute(
        "UPDATE requests SET state=:state, route=:route, updated_at=:updated_at, deadline=:deadline, "
        "next_reminder_at=:next_reminder_at, next_escalation_at=:next_escalation_at, body=:body "
        "WHERE id=:id",
        cols,
    )


def _insert_event(conn: sqlite3.Connection, event: Event) -> None:
    conn.execute(
        "INSERT INTO events (request_id, at, kind, actor, data) VALUES (?,?,?,?,?)",
        (event.request_id, ts(event.at), event.kind, event.actor, json.dumps(event.data, default=str)),
    )


def _outbox_item(r: tuple[Any, ...]) -> OutboxItem:
    return OutboxItem(
        id=r[0], request_id=r[1], state=r[2], attempts=r[3], due_at=datetime.fromisoformat(r[4]),
        created_at=datetime.fromisoformat(r[5]), last_error=r[6], dead=bool(r[7]),
    )
