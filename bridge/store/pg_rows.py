"""PostgreSQL store internals: schema migration, shared statements, row <-> argument conversions.

Every text value goes through `encode_text` on the way in and `decode_text` on the way out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from importlib import resources
from typing import Any

import asyncpg

from bridge.models import Event, Post, Request
from bridge.store import pg_chain
from bridge.store.base import OutboxItem, StoreError
from bridge.store.codec import SCHEMA_VERSION, STUCK_DELIVERED, resumes
from bridge.store.concerns.retention import PARTS, PRUNABLE_STATES
from bridge.store.pg_support import decode_opt, decode_text, encode_opt, encode_text
from bridge.store.query import pg_parsed as _pg_parsed
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

MIGRATION_LOCK = 0x6869746C  # "hitl": replicas starting together migrate one at a time
SCHEMA = resources.files("bridge.store").joinpath("schema_postgres.sql").read_text()  # read once, at import
#: what this bridge's schema script creates; when the database says it already ran it, no DDL runs
#: at all: a replica starting beside running ones must not take table locks (CREATE INDEX IF NOT
#: EXISTS still locks the table, and deadlocks with live writes)
SCHEMA_DIGEST = hashlib.sha256(SCHEMA.encode()).hexdigest()[:32]


async def migrate(conn: asyncpg.Connection) -> None:
    """Create the schema in an empty database (or schema) and refuse one that is too new."""
    if await conn.fetchval("SELECT current_schema()") is None:
        path = await conn.fetchval("SHOW search_path")
        raise StoreError(
            f"no schema to create tables in: none of search_path ({path}) exists; "
            "create it first (CREATE SCHEMA …) or fix search_path in the store url"
        )
    await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
    version = 0
    if await conn.fetchval("SELECT to_regclass('meta')") is not None:
        found = await conn.fetchval("SELECT value FROM meta WHERE key='schema_version'")
        version = int(found) if found is not None else 0
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the database schema is version {version}; this bridge knows {SCHEMA_VERSION}: upgrade hitl-bridge"
        )
    if version == SCHEMA_VERSION and \
            await conn.fetchval("SELECT value FROM meta WHERE key='schema_digest'") == SCHEMA_DIGEST:
        # up to date: nothing to create; one write to a table nothing else locks proves the
        # server takes writes (a standby, a read-only session: refused here, at start)
        await conn.execute("UPDATE meta SET value=value WHERE key='schema_digest'")
        return
    if version:  # columns added without a version bump (older bridges ignore them)
        if not await _has_column(conn, "requests", "step_due_at"):
            await conn.execute("ALTER TABLE requests ADD COLUMN step_due_at TIMESTAMPTZ")
        if not await _has_column(conn, "outbox", "source"):
            await conn.execute("ALTER TABLE outbox ADD COLUMN source TEXT")
            await conn.execute("UPDATE outbox o SET source=r.source FROM requests r WHERE r.id=o.request_id "
                               "AND NOT o.done")
        if not await _has_column(conn, "requests", "resume"):
            await conn.execute("ALTER TABLE requests ADD COLUMN resume BOOLEAN NOT NULL DEFAULT FALSE")
            await conn.execute(f"UPDATE requests SET resume=TRUE WHERE state IN ('pending','posted') AND "
                               f"{_pg_parsed(RESUME_TEST)}")
        if not await _has_column(conn, "requests", "next_at"):  # rewrites the table once
            await conn.execute(f"ALTER TABLE requests ADD COLUMN next_at TIMESTAMPTZ GENERATED ALWAYS AS "
                               f"({NEXT_AT_SQL}) STORED")
        if not await _has_column(conn, "requests", "created_by"):  # external ids became their creator's own
            await conn.execute("ALTER TABLE requests ADD COLUMN created_by TEXT NOT NULL DEFAULT ''")
            await conn.execute("UPDATE requests SET created_by=coalesce(body::json->>'created_by', '') "
                               "WHERE external_id IS NOT NULL AND body LIKE '{%'")
    counted = await conn.fetchval("SELECT to_regclass('request_counts')") is not None
    await conn.execute(SCHEMA)
    if not counted:  # new: counted from the rows once (the triggers, created above, hold writers off meanwhile)
        await conn.execute("INSERT INTO request_counts (state, shard, n) SELECT state, 0, COUNT(*) FROM requests "
                           "GROUP BY state")
    await pg_chain.start(conn)
    await conn.execute(
        "INSERT INTO meta (key, value) VALUES ('schema_version', $1), ('schema_digest', $2) "
        "ON CONFLICT (key) DO UPDATE SET value=excluded.value",
        str(SCHEMA_VERSION), SCHEMA_DIGEST,
    )


#: `requests.next_at` as schema_postgres.sql defines it (for adding it to an older database)
NEXT_AT_SQL = ("CASE WHEN state IN ('pending','posted') "
               "THEN LEAST(deadline, next_reminder_at, next_escalation_at, step_due_at) END")
#: over the parsed body `x`: an escalation level reached or a timer step claimed
RESUME_TEST = ("COALESCE((x->>'escalation_level')::int > 0, FALSE) "
               "OR COALESCE(jsonb_array_length(x->'timer_steps') > 0, FALSE)")


async def _has_column(conn: asyncpg.Connection, table: str, column: str) -> bool:
    return bool(await conn.fetchval(
        "SELECT 1 FROM information_schema.columns WHERE table_schema=current_schema() AND table_name=$1 "
        "AND column_name=$2", table, column))


UPDATE_REQUEST = (
    "UPDATE requests SET state=$2, route=$3, updated_at=$4, deadline=$5, next_reminder_at=$6, "
    "next_escalation_at=$7, body=$8, step_due_at=$9, resume=$10 WHERE id=$1"
)
UPDATE_ARGS = 10  # how many parameters UPDATE_REQUEST takes (write_args)


def event_insert(n: int, source: str = "") -> str:
    """INSERT … SELECT of one event from parameters $n…$n+4 (request_id, at, kind, actor, data);
    writes nothing when the time ($n+1) is NULL (no event) or `source` (e.g. "FROM ins") has no row."""
    return (
        "INSERT INTO events (request_id, at, kind, actor, data) "
        f"SELECT ${n}::text, ${n + 1}::timestamptz, ${n + 2}::text, ${n + 3}::text, ${n + 4}::text "
        f"{source} WHERE ${n + 1}::timestamptz IS NOT NULL"
    )


POST_INSERT = "INSERT INTO posts (request_id, channel, target, ref, ok, error, at) VALUES ($1,$2,$3,$4,$5,$6,$7)"


def post_args(post: Post) -> tuple[Any, ...]:
    return (encode_text(post.request_id), encode_text(post.channel), encode_text(post.target),
            encode_text(json.dumps(post.ref)), post.ok, encode_opt(post.error), post.at)


def write_args(request: Request) -> tuple[Any, ...]:
    return (
        encode_text(request.id), request.state.value, encode_text(request.route), request.updated_at,
        request.deadline, request.next_reminder_at, request.next_escalation_at, encode_text(request.model_dump_json()),
        request.step_due_at, resumes(request),
    )


def event_args(event: Event | None) -> tuple[Any, ...]:
    if event is None:
        return (None, None, None, None, None)
    return (encode_text(event.request_id), event.at, encode_text(event.kind), encode_text(event.actor),
            json.dumps(event.data, default=str))


def load_body(body: str) -> Request:
    return Request.model_validate_json(decode_text(body))


def outbox_item(r: Iterable[Any]) -> OutboxItem:
    id_, request_id, state, attempts, due_at, created_at, last_error, dead = r
    return OutboxItem(
        id=int(id_), request_id=decode_text(request_id), state=decode_text(state), attempts=attempts,
        due_at=due_at, created_at=created_at, last_error=decode_opt(last_error), dead=bool(dead),
    )


class PostgresSteps:
    """The steps of `bridge.store.transactions` as PostgreSQL SQL, in the caller's transaction;
    a request is locked with SELECT … FOR UPDATE, so concurrent writers on any replica serialise."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def locked(self, step: Locked) -> Request | None:
        body = await self.conn.fetchval("SELECT body FROM requests WHERE id=$1 FOR UPDATE",
                                        encode_text(step.request_id))
        return load_body(body) if body is not None else None

    async def save(self, step: Save) -> None:
        # the row, its (first) event and its outbox entry in one statement: one round trip
        first, *rest = step.events or (None,)
        n = UPDATE_ARGS
        await self.conn.execute(
            f"WITH upd AS ({UPDATE_REQUEST}), ev AS ({event_insert(n + 1)}), "
            "ob AS (INSERT INTO outbox (request_id, source, state, due_at, created_at) "
            f"  SELECT $1, ${n + 7}::text, ${n + 6}::text, $4, $4 WHERE ${n + 6}::text IS NOT NULL) "
            "SELECT 1",
            *write_args(step.request), *event_args(first), encode_opt(step.enqueue), encode_text(step.request.source),
        )
        for event in rest:
            await self.conn.execute(event_insert(1), *event_args(event))

    async def add_events(self, step: AddEvents) -> None:
        for event in step.events:
            await self.conn.execute(event_insert(1), *event_args(event))

    async def outbox_done(self, step: OutboxDone) -> None:
        await self.conn.execute("UPDATE outbox SET done=TRUE WHERE id=$1", step.item_id)

    async def prunable(self, step: Prunable) -> list[str]:
        return [r[0] for r in await self.conn.fetch(
            "SELECT id FROM requests r WHERE state = ANY($1::text[]) AND created_at < $2 AND updated_at < $2 "
            "AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.request_id=r.id AND NOT o.done) "
            "LIMIT $3 FOR UPDATE SKIP LOCKED", list(PRUNABLE_STATES), step.before, step.limit)]

    async def forget(self, step: Forget) -> None:
        ids = list(step.request_ids)
        for table in PARTS:
            await self.conn.execute(f"DELETE FROM {table} WHERE request_id = ANY($1::text[])", ids)
        await self.conn.execute("DELETE FROM requests WHERE id = ANY($1::text[])", ids)

    async def retire(self, step: Retire) -> None:
        await pg_chain.retire(self.conn, list(step.request_ids))

    async def chain_ends(self, _step: ChainEnds) -> ChainSpan:
        return await pg_chain.ends(self.conn)

    async def hash_at(self, step: HashAt) -> str | None:
        return await pg_chain.hash_at(self.conn, step.seq)

    async def cut(self, step: Cut) -> None:
        await pg_chain.cut(self.conn, step.after, step.upto, step.digest)

    async def still_stuck(self, step: StillStuck) -> bool:
        found = await self.conn.fetchrow(f"{STUCK_DELIVERED} AND id=$1 FOR UPDATE", encode_text(step.request_id))
        return found is not None
