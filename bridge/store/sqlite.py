"""SQLite store: the SQL of every concern, over `SQLiteEngine` (one connection, group-committed
writes, a read connection of its own; see `bridge.store.sqlite_engine`). The multi-step writes
are `bridge.store.transactions`, driven with `SQLiteSteps`. The URL it takes: `SQLiteEngine.from_url`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from bridge.models import Event, Post, Request, RequestState
from bridge.store import sqlite_chain
from bridge.store.base import (
    OutboxItem,
    OutboxStats,
    TimerRow,
    Vote,
)
from bridge.store.chain import ChainRow, ChainState
from bridge.store.codec import STUCK_DELIVERED, load_request, parse_ts, request_columns, ts
from bridge.store.concerns.kv import live
from bridge.store.concerns.search import less_voted, wanted_counts
from bridge.store.query import RequestQuery, is_plain, sqlite_page, sqlite_where
from bridge.store.sqlite_grants import SQLiteGrants
from bridge.store.sqlite_rows import (
    INSERT_OUTBOX,
    INSERT_POST,
    INSERT_REQUEST,
    OUTBOX_COLUMNS,
    insert_event,
    move_to_posted,
    outbox_item,
    post_row,
    write,
)


class SQLiteStore(SQLiteGrants):
    """Everything the bridge remembers, in one SQLite file."""

    # requests -----------------------------------------------------------------------
    async def create_request(self, request: Request, event: Event | None = None, *, posts: Sequence[Post] = (),
                             events_after: Sequence[Event] = ()) -> tuple[Request, bool]:
        cols = request_columns(request)
        copies = [post_row(p) for p in posts]

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
            if copies:
                conn.executemany(INSERT_POST, copies)
            for later in events_after:
                insert_event(conn, later)
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

    # audit ----------------------------------------------------------------------------
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

    async def chain_state(self) -> ChainState:
        return await self._read(sqlite_chain.state)

    async def chain_page(self, after_seq: int, limit: int) -> list[ChainRow]:
        return await self._read(lambda c: sqlite_chain.page(c, after_seq, limit))

    async def unchained_events(self, limit: int) -> list[ChainRow]:
        return await self._read(lambda c: sqlite_chain.unchained(c, limit))

    # posts ------------------------------------------------------------------------------
    async def add_post(self, post: Post) -> None:
        await self._run(lambda c: c.execute(INSERT_POST, post_row(post)))

    async def record_posts(self, request_id: str, posts: list[Post], events: list[Event], *,
                           now: datetime, held: Request | None = None) -> Request | None:
        def txn(conn: sqlite3.Connection) -> Request | None:
            conn.executemany(INSERT_POST, [post_row(p) for p in posts])
            row = conn.execute("SELECT state, updated_at FROM requests WHERE id=?", (request_id,)).fetchone()
            if row is None or row[0] not in ("pending", "posted"):
                return None  # closed meanwhile: the copies are kept (to be updated), no `posted` after the close
            for event in events:
                insert_event(conn, event)
            if not any(p.ok for p in posts) or row[0] != "pending":
                return None
            if held is not None and held.state is RequestState.pending and ts(held.updated_at) == row[1]:
                return move_to_posted(conn, held, now)  # the row is the caller's copy: no re-read
            request = load_request(conn.execute("SELECT body FROM requests WHERE id=?", (request_id,)).fetchone()[0])
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

    async def stuck_with_answer(self) -> list[str]:
        # found on the read connection (an expired request with no answer stays `expired` for
        # good: there may be many, and no write waits meanwhile), then each re-checked in the write
        return await self._read(lambda c: [r[0] for r in c.execute(
            f"{STUCK_DELIVERED} AND json_type(body, '$.answer') = 'object'")])

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
        if not live(row[1], ts(now)):
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


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    rows = conn.execute("SELECT state, SUM(n) FROM request_counts GROUP BY state HAVING SUM(n) <> 0").fetchall()
    return {state: int(n) for state, n in rows}


def _plain_counts(conn: sqlite3.Connection, query: RequestQuery) -> dict[str, int]:
    """By state from the kept counts, less the requests one of `query.not_voted_by` voted on."""
    counts = wanted_counts(_counts(conn), query)
    if not (query.not_voted_by and counts):
        return less_voted(counts, ())
    voters = sorted(set(query.not_voted_by))  # CROSS JOIN: from the votes of these voters (ix_votes_voter),
    states = sorted(counts)  # never from every request in a state
    return less_voted(counts, conn.execute(
        "SELECT r.state, COUNT(DISTINCT r.id) FROM votes v CROSS JOIN requests r ON r.id = v.request_id "
        f"WHERE v.voter IN ({','.join('?' * len(voters))}) AND r.state IN ({','.join('?' * len(states))}) "
        "GROUP BY r.state", [*voters, *states]).fetchall())
