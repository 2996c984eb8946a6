"""SQLite store internals: schema migration, shared statements, row <-> model conversions.
Every function runs inside a transaction the caller opened (in aiosqlite's thread)."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import datetime
from importlib import resources
from typing import Any

from pydantic import TypeAdapter

from bridge.models import Event, Post, Request, RequestState
from bridge.store import sqlite_chain
from bridge.store.base import OutboxItem, StoreError
from bridge.store.codec import SCHEMA_VERSION, STUCK_DELIVERED, load_request, request_columns, ts
from bridge.store.concerns.retention import PARTS
from bridge.store.transactions import (
    AddEvents,
    ChainEnds,
    ChainSpan,
    Cut,
    Forget,
    HashAt,
    Locked,
    OutboxDone,
    Prunable,
    Retire,
    Save,
    StillStuck,
)

COLUMNS = ("id, source, external_id, state, route, created_at, updated_at, deadline, "
           "next_reminder_at, next_escalation_at, step_due_at, resume, created_by, body")
INSERT_REQUEST = (f"INSERT INTO requests ({COLUMNS}) VALUES (:id, :source, :external_id, :state, :route, "
                  ":created_at, :updated_at, :deadline, :next_reminder_at, :next_escalation_at, :step_due_at, "
                  ":resume, :created_by, :body)")
INSERT_POST = "INSERT INTO posts (request_id, channel, target, ref, ok, error, at) VALUES (?,?,?,?,?,?,?)"
OUTBOX_COLUMNS = "id, request_id, state, attempts, due_at, created_at, last_error, dead"
#: an outbox entry keeps its request's source, so /metrics counts failing ones by source from an index
INSERT_OUTBOX = ("INSERT INTO outbox (request_id, source, state, due_at, created_at) "
                 "VALUES (:rid, (SELECT source FROM requests WHERE id=:rid), :state, :due, :created)")
#: up to :limit closed requests last changed before :before whose outcome needs nothing more
#: (see Store.prune_closed); read along ix_requests_state_page (created_at <= updated_at)
PRUNABLE = (
    "SELECT id FROM requests r WHERE state IN ('cancelled','delivered','expired','failed') "
    "AND created_at < :before AND updated_at < :before "
    "AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.request_id=r.id AND NOT o.done) LIMIT :limit"
)
_SIZE = re.compile(r"^(\d+)\s*([kmg]?)(?:i?b)?$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """`500MiB`, `64k`, `1G`, `1048576` → bytes (binary units); ValueError otherwise."""
    found = _SIZE.match(text.strip())
    if not found:
        raise ValueError(f"{text!r} is not a size (like 512MiB or 2GiB)")
    return int(found.group(1)) * 1024 ** " kmg".index((found.group(2) or " ").lower())


def migrate(conn: sqlite3.Connection) -> None:
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
    # columns added without a version bump (older bridges ignore them), before the indexes on them
    columns = {r[1] for r in conn.execute("PRAGMA table_xinfo(requests)")}  # xinfo: generated ones too
    if columns and "step_due_at" not in columns:
        conn.execute("ALTER TABLE requests ADD COLUMN step_due_at TEXT")
    if columns and "resume" not in columns:
        conn.execute("ALTER TABLE requests ADD COLUMN resume INTEGER NOT NULL DEFAULT 0")
        conn.execute(f"UPDATE requests SET resume=1 WHERE {RESUME_SQL}")
    if columns and "next_at" not in columns:
        conn.execute(f"ALTER TABLE requests ADD COLUMN next_at TEXT GENERATED ALWAYS AS ({NEXT_AT_SQL}) VIRTUAL")
    if columns and "created_by" not in columns:  # external ids became their creator's own
        conn.execute("ALTER TABLE requests ADD COLUMN created_by TEXT NOT NULL DEFAULT ''")
        conn.execute("UPDATE requests SET created_by=coalesce(json_extract(body, '$.created_by'), '') "
                     "WHERE external_id IS NOT NULL")
    sqlite_chain.add_columns(conn)
    counted = conn.execute("SELECT 1 FROM sqlite_master WHERE name='request_counts'").fetchone() is not None
    columns = {r[1] for r in conn.execute("PRAGMA table_info(outbox)")}
    if columns and "source" not in columns:
        conn.execute("ALTER TABLE outbox ADD COLUMN source TEXT")
        conn.execute("UPDATE outbox SET source=(SELECT r.source FROM requests r WHERE r.id=outbox.request_id) "
                     "WHERE done=0")
    for statement in statements(resources.files("bridge.store").joinpath("schema_sqlite.sql").read_text()):
        conn.execute(statement)
    if not counted:  # the counts table is new: start it from the rows (the triggers keep it from now on)
        conn.execute("INSERT INTO request_counts (state, shard, n) SELECT state, 0, COUNT(*) FROM requests "
                     "GROUP BY state")
    sqlite_chain.start(conn)
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
        "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
        (str(SCHEMA_VERSION),),
    )


#: an open request whose timers a restart must look at whole (an escalation reached, a claimed step),
#: as SQL over the stored body: sets `resume` in a database from before the column
RESUME_SQL = ("state IN ('pending','posted') AND (json_extract(body, '$.escalation_level') > 0 "
              "OR json_array_length(body, '$.timer_steps') > 0)")
#: `requests.next_at` as schema_sqlite.sql defines it (for adding it to an older database)
NEXT_AT_SQL = ("CASE WHEN state IN ('pending','posted') THEN nullif(min(coalesce(deadline, '9999'), "
               "coalesce(next_reminder_at, '9999'), coalesce(next_escalation_at, '9999'), "
               "coalesce(step_due_at, '9999')), '9999') END")


def statements(script: str) -> list[str]:
    """The statements of an SQL script (a trigger's body holds `;` of its own)."""
    out: list[str] = []
    pending = ""
    for part in script.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending.strip())
            pending = ""
    return out


def write(conn: sqlite3.Connection, request: Request) -> None:
    conn.execute(
        "UPDATE requests SET state=:state, route=:route, updated_at=:updated_at, deadline=:deadline, "
        "next_reminder_at=:next_reminder_at, next_escalation_at=:next_escalation_at, step_due_at=:step_due_at, "
        "resume=:resume, body=:body WHERE id=:id",
        request_columns(request),
    )


_INSTANT = TypeAdapter(datetime)
#: pending → posted in place: the row's columns, and the same two fields of its body (JSON edited by SQLite)
MOVE_TO_POSTED = ("UPDATE requests SET state='posted', updated_at=:at, "
                  "body=json_set(body, '$.state', 'posted', '$.updated_at', :at_json) WHERE id=:id")


def move_to_posted(conn: sqlite3.Connection, held: Request, now: datetime) -> Request:
    """Move the pending request the caller holds to `posted` (its row is `held`, as written:
    the caller checked its `updated_at`, which every write sets): two fields change, so the
    stored body is edited in place rather than read, parsed and written whole again."""
    conn.execute(MOVE_TO_POSTED, {"at": ts(now), "at_json": _INSTANT.dump_python(now, mode="json"), "id": held.id})
    return held.model_copy(update={"state": RequestState.posted, "updated_at": now})


def post_row(post: Post) -> tuple[Any, ...]:
    """The values of `INSERT_POST` for one copy."""
    return (post.request_id, post.channel, post.target, json.dumps(post.ref), int(post.ok), post.error, ts(post.at))


def insert_event(conn: sqlite3.Connection, event: Event) -> None:
    """Append `event` to the store's hash chain (`bridge.store.sqlite_chain`)."""
    sqlite_chain.append(conn, event)


def outbox_item(r: tuple[Any, ...]) -> OutboxItem:
    return OutboxItem(
        id=r[0], request_id=r[1], state=r[2], attempts=r[3], due_at=datetime.fromisoformat(r[4]),
        created_at=datetime.fromisoformat(r[5]), last_error=r[6], dead=bool(r[7]),
    )


class SQLiteSteps:
    """The steps of `bridge.store.transactions` as SQLite SQL, in the caller's `BEGIN IMMEDIATE`
    transaction (nobody else writes meanwhile: a read is as good as a lock)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def locked(self, step: Locked) -> Request | None:
        row = self.conn.execute("SELECT body FROM requests WHERE id=?", (step.request_id,)).fetchone()
        return load_request(row[0]) if row else None

    def save(self, step: Save) -> None:
        write(self.conn, step.request)
        self.add_events(step)
        if step.enqueue is not None:
            due = ts(step.request.updated_at)
            self.conn.execute(INSERT_OUTBOX, {"rid": step.request.id, "state": step.enqueue, "due": due,
                                              "created": due})

    def add_events(self, step: AddEvents | Save) -> None:
        for event in step.events:
            insert_event(self.conn, event)

    def outbox_done(self, step: OutboxDone) -> None:
        self.conn.execute("UPDATE outbox SET done=1 WHERE id=?", (step.item_id,))

    def prunable(self, step: Prunable) -> list[str]:
        return [r[0] for r in self.conn.execute(PRUNABLE, {"before": ts(step.before), "limit": step.limit})]

    def forget(self, step: Forget) -> None:
        ids = list(step.request_ids)
        marks = ",".join("?" * len(ids))
        for table in PARTS:
            self.conn.execute(f"DELETE FROM {table} WHERE request_id IN ({marks})", ids)
        self.conn.execute(f"DELETE FROM requests WHERE id IN ({marks})", ids)

    def retire(self, step: Retire) -> None:
        sqlite_chain.retire(self.conn, list(step.request_ids))

    def chain_ends(self, _step: ChainEnds) -> ChainSpan:
        return sqlite_chain.ends(self.conn)

    def hash_at(self, step: HashAt) -> str | None:
        return sqlite_chain.hash_at(self.conn, step.seq)

    def cut(self, step: Cut) -> None:
        sqlite_chain.cut(self.conn, step.after, step.upto, step.digest)

    def still_stuck(self, step: StillStuck) -> bool:
        return self.conn.execute(f"{STUCK_DELIVERED} AND id=?", (step.request_id,)).fetchone() is not None
