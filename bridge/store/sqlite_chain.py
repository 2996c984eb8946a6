"""The events' hash chain in SQLite (see `bridge.store.chain`): appended in Python inside the
writer's transaction (`BEGIN IMMEDIATE`: one writer at a time, so the head read is the head).

The daemon's writing connection (`WriterConnection`) remembers the head it last wrote, so an
append does not read it again. The engine forgets it whenever it may be wrong: another process
committed (SQLite's `data_version` changed), or a transaction or savepoint rolled back."""

from __future__ import annotations

import json
import sqlite3

from bridge.models import Event
from bridge.store.chain import GENESIS, RETIRED, ChainRow, ChainState, link
from bridge.store.codec import ts
from bridge.store.transactions import ChainSpan

#: the chain's columns of an event, in ChainRow's order
ROW = "id, seq, prev_hash, hash, request_id, at, kind, actor, data"


class WriterConnection(sqlite3.Connection):
    """A connection that remembers the chain head (seq, hash) its own appends left, while the
    engine vouches that nobody else changed it (`forget_head` otherwise)."""

    chain_head: tuple[int, str] | None = None


def forget_head(conn: sqlite3.Connection) -> None:
    """The head is read again at the next append (another writer, or a rollback, may have moved it)."""
    if isinstance(conn, WriterConnection):
        conn.chain_head = None


def add_columns(conn: sqlite3.Connection) -> None:
    """Give an events table from before schema 3 its chain columns (before the schema's indexes)."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(events)")}
    for column, kind in (("seq", "INTEGER"), ("prev_hash", "TEXT"), ("hash", "TEXT")):
        if columns and column not in columns:
            conn.execute(f"ALTER TABLE events ADD COLUMN {column} {kind}")


def start(conn: sqlite3.Connection) -> None:
    """Create the chain head once, chaining the events already kept (in the order they were
    written). Later, an unchained event is one written behind the bridge's back."""
    if conn.execute("SELECT 1 FROM audit_chain WHERE id=1").fetchone() is not None:
        return
    conn.execute("INSERT INTO audit_chain (id, seq, hash, cut_seq, cut_hash) VALUES (1, 0, ?, 0, ?)",
                 (GENESIS, GENESIS))
    rows = conn.execute("SELECT id, request_id, at, kind, actor, data FROM events WHERE seq IS NULL ORDER BY id")
    for row in rows.fetchall():
        _chain(conn, row[0], *row[1:])


def append(conn: sqlite3.Connection, event: Event) -> None:
    """Insert `event` as the chain's next link."""
    values = (event.request_id, ts(event.at) or "", event.kind, event.actor, json.dumps(event.data, default=str))
    head = conn.chain_head if isinstance(conn, WriterConnection) else None
    seq, prev = head if head is not None else conn.execute("SELECT seq, hash FROM audit_chain WHERE id=1").fetchone()
    digest = link(prev, *values)
    conn.execute("INSERT INTO events (request_id, at, kind, actor, data, seq, prev_hash, hash) "
                 "VALUES (?,?,?,?,?,?,?,?)", (*values, seq + 1, prev, digest))
    conn.execute("UPDATE audit_chain SET seq=?, hash=? WHERE id=1", (seq + 1, digest))
    if isinstance(conn, WriterConnection):
        conn.chain_head = (seq + 1, digest)


def _chain(conn: sqlite3.Connection, event_id: int, request_id: str, at: str, kind: str, actor: str,
           data: str) -> None:
    forget_head(conn)
    seq, prev = conn.execute("SELECT seq, hash FROM audit_chain WHERE id=1").fetchone()
    digest = link(prev, request_id, at, kind, actor, data)
    conn.execute("UPDATE events SET seq=?, prev_hash=?, hash=? WHERE id=?", (seq + 1, prev, digest, event_id))
    conn.execute("UPDATE audit_chain SET seq=?, hash=? WHERE id=1", (seq + 1, digest))


def retire(conn: sqlite3.Connection, request_ids: list[str]) -> None:
    """Clear these requests' events, keeping their links (`transactions.Retire`)."""
    marks = ",".join("?" * len(request_ids))
    conn.execute(f"UPDATE events SET request_id='', kind=?, actor='', data='' WHERE request_id IN ({marks})",
                 (RETIRED, *request_ids))


def ends(conn: sqlite3.Connection) -> ChainSpan:
    head, cut = conn.execute("SELECT seq, cut_seq FROM audit_chain WHERE id=1").fetchone()
    first = conn.execute("SELECT seq FROM events WHERE seq > ? AND kind <> ? ORDER BY seq LIMIT 1",
                         (cut, RETIRED)).fetchone()
    return ChainSpan(head, cut, first[0] if first else None)


def hash_at(conn: sqlite3.Connection, seq: int) -> str | None:
    found = conn.execute("SELECT hash FROM events WHERE seq=?", (seq,)).fetchone()
    return found[0] if found else None


def cut(conn: sqlite3.Connection, after: int, upto: int, digest: str) -> None:
    conn.execute("DELETE FROM events WHERE seq > ? AND seq <= ? AND kind=?", (after, upto, RETIRED))
    conn.execute("UPDATE audit_chain SET cut_seq=?, cut_hash=? WHERE id=1", (upto, digest))


def state(conn: sqlite3.Connection) -> ChainState:
    row = conn.execute("SELECT seq, hash, cut_seq, cut_hash FROM audit_chain WHERE id=1").fetchone()
    return ChainState(*row) if row else ChainState(0, GENESIS, 0, GENESIS)


def page(conn: sqlite3.Connection, after_seq: int, limit: int) -> list[ChainRow]:
    """Up to `limit` chained rows after `after_seq`, in chain order."""
    rows = conn.execute(f"SELECT {ROW} FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (after_seq, limit))
    return [ChainRow(*r) for r in rows]


def unchained(conn: sqlite3.Connection, limit: int) -> list[ChainRow]:
    """Rows with no place in the chain (written behind the bridge's back)."""
    rows = conn.execute(f"SELECT {ROW} FROM events WHERE seq IS NULL OR hash IS NULL ORDER BY id LIMIT ?", (limit,))
    return [ChainRow(*r) for r in rows]
