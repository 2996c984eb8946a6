"""PostgreSQL store: the SQL of every concern, over `PostgresEngine` (an asyncpg pool, safe for
several replicas; see `bridge.store.pg_engine`). The multi-step writes are
`bridge.store.transactions`, driven with `PostgresSteps`; `claim_due` takes outbox rows with
FOR UPDATE SKIP LOCKED and pushes their due time a lease ahead, so two replicas never deliver
the same entry at once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from bridge.models import Event, Post, Request, RequestState
from bridge.store import pg_chain
from bridge.store.base import (
    OutboxItem,
    OutboxStats,
    StoreError,
    TimerRow,
    Vote,
)
from bridge.store.chain import ChainRow, ChainState
from bridge.store.codec import STUCK_DELIVERED, resumes
from bridge.store.concerns.kv import live
from bridge.store.concerns.search import less_voted, wanted_counts
from bridge.store.pg_grants import PostgresGrants
from bridge.store.pg_rows import (
    POST_INSERT,
    UPDATE_ARGS,
    UPDATE_REQUEST,
    event_args,
    event_insert,
    load_body,
    outbox_item,
    post_args,
    write_args,
)
from bridge.store.pg_support import decode_opt, decode_text, encode_opt, encode_text
from bridge.store.query import RequestQuery, is_plain, pg_parsed, postgres_page, postgres_where

_OUTBOX_COLUMNS = "id, request_id, state, attempts, due_at, created_at, last_error, dead"
#: over the parsed body `x` (NULL when the body cannot be parsed in SQL: then Python decides)
_HAS_ANSWER = "jsonb_typeof(x->'answer') = 'object'"


_INSERT_REQUEST = (
    "WITH ins AS (INSERT INTO requests (id, source, external_id, state, route, created_at, updated_at, "
    "  deadline, next_reminder_at, next_escalation_at, body, step_due_at, resume, created_by) "
    "  VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14) "
    "  ON CONFLICT (source, created_by, external_id) WHERE external_id IS NOT NULL DO NOTHING "
    "  RETURNING id), ")
#: a request and its `created` event ($15…$19)
CREATE = _INSERT_REQUEST + f"ev AS ({event_insert(15, 'FROM ins')}) SELECT id FROM ins"
#: a request, its events in order (arrays $15…$19) and its copies (arrays $20…$26): one INSERT
#: per table (data-modifying CTEs run in no set order; rows of one INSERT go in the SELECT's order)
CREATE_POSTED = _INSERT_REQUEST + (
    "ev AS (INSERT INTO events (request_id, at, kind, actor, data) "
    "  SELECT e.r, e.a, e.k, e.c, e.d FROM unnest($15::text[], $16::timestamptz[], $17::text[], $18::text[], "
    "  $19::text[]) WITH ORDINALITY AS e(r, a, k, c, d, n) WHERE EXISTS (SELECT 1 FROM ins) ORDER BY e.n), "
    "p AS (INSERT INTO posts (request_id, channel, target, ref, ok, error, at) "
    "  SELECT * FROM unnest($20::text[], $21::text[], $22::text[], $23::text[], $24::bool[], $25::text[], "
    "  $26::timestamptz[]) WHERE EXISTS (SELECT 1 FROM ins)) "
    "SELECT id FROM ins")


class PostgresStore(PostgresGrants):
    """Everything the bridge remembers, in PostgreSQL."""

    # requests -----------------------------------------------------------------------
    async def create_request(self, request: Request, event: Event | None = None, *, posts: Sequence[Post] = (),
                             events_after: Sequence[Event] = ()) -> tuple[Request, bool]:
        # One statement (atomic on its own, one round trip): the event rows (and copies) are
        # written only when the request row was. A concurrent twin waits for our commit, then
        # does nothing.
        row = (encode_text(request.id), encode_text(request.source), encode_opt(request.external_id),
               request.state.value, encode_text(request.route), request.created_at, request.updated_at,
               request.deadline, request.next_reminder_at, request.next_escalation_at,
               encode_text(request.model_dump_json()), request.step_due_at, resumes(request),
               encode_text(request.created_by or ""))
        if posts or events_after:
            events = [e for e in (event, *events_after) if e is not None]
            event_cols = list(zip(*[event_args(e) for e in events], strict=True)) or [()] * 5
            post_cols = list(zip(*[post_args(p) for p in posts], strict=True)) or [()] * 7
            sql, args = CREATE_POSTED, (*row, *map(list, event_cols), *map(list, post_cols))
        else:
            sql, args = CREATE, (*row, *event_args(event))
        async with self._conn() as conn:
            inserted = await conn.fetchval(sql, *args)
            if inserted is not None:
                return request, True
            body = await conn.fetchval(
                "SELECT body FROM requests WHERE source=$1 AND created_by=$2 AND external_id=$3",
                encode_text(request.source), encode_text(request.created_by or ""), encode_opt(request.external_id),
            )
        if body is None:
            raise StoreError(f"request {request.external_id!r} conflicted but cannot be read")
        return load_body(body), False

    async def get_request(self, request_id: str) -> Request | None:
        async with self._conn() as conn:
            body = await conn.fetchval("SELECT body FROM requests WHERE id=$1", encode_text(request_id))
        return load_body(body) if body is not None else None

    async def find_by_external_id(self, source: str, external_id: str,
                                  created_by: str | None = None) -> Request | None:
        async with self._conn() as conn:
            body = await conn.fetchval(
                "SELECT body FROM requests WHERE source=$1 AND created_by=$2 AND external_id=$3",
                encode_text(source), encode_text(created_by or ""), encode_text(external_id),
            )
        return load_body(body) if body is not None else None

    async def count_by_state(self) -> dict[str, int]:
        async with self._conn() as conn:
            return await _counts(conn)

    async def find_requests(self, query: RequestQuery, *, limit: int = 100, offset: int = 0) -> list[Request]:
        sql, args = postgres_page(query, limit=limit, offset=offset, encode=encode_text)
        async with self._conn() as conn:
            ids = [r[0] for r in await conn.fetch(sql, *args)]
            rows = await conn.fetch("SELECT id, body FROM requests WHERE id = ANY($1::text[])", ids) if ids else []
        bodies = {r[0]: r[1] for r in rows}
        return [load_body(bodies[i]) for i in ids if i in bodies]

    async def count_requests(self, query: RequestQuery) -> dict[str, int]:
        if is_plain(query):
            async with self._conn() as conn:
                return await _plain_counts(conn, query)
        args: list[Any] = []
        where = postgres_where(query, args, encode=encode_text)
        sql = "SELECT state, COUNT(*) FROM requests" + (" WHERE " + " AND ".join(where) if where else "")
        async with self._conn() as conn:
            rows = await conn.fetch(sql + " GROUP BY state", *args)
        return {r[0]: int(r[1]) for r in rows}

    # audit ----------------------------------------------------------------------------
    async def list_events(self, request_id: str) -> list[Event]:
        async with self._conn() as conn:
            rows = await conn.fetch(
                "SELECT id, request_id, at, kind, actor, data FROM events WHERE request_id=$1 ORDER BY id",
                encode_text(request_id),
            )
        return [
            Event(id=r[0], request_id=decode_text(r[1]), at=r[2], kind=decode_text(r[3]),
                  actor=decode_text(r[4]), data=json.loads(decode_text(r[5])))
            for r in rows
        ]

    async def chain_state(self) -> ChainState:
        async with self._conn() as conn:
            return await pg_chain.state(conn)

    async def chain_page(self, after_seq: int, limit: int) -> list[ChainRow]:
        async with self._conn() as conn:
            return await pg_chain.page(conn, after_seq, limit)

    async def unchained_events(self, limit: int) -> list[ChainRow]:
        async with self._conn() as conn:
            return await pg_chain.unchained(conn, limit)

    def readable(self, row: ChainRow) -> ChainRow:
        return replace(row, request_id=decode_text(row.request_id), kind=decode_text(row.kind),
                       actor=decode_text(row.actor), data=decode_text(row.data))

    # posts ------------------------------------------------------------------------------
    async def add_post(self, post: Post) -> None:
        async with self._conn() as conn:
            await conn.execute(POST_INSERT, *post_args(post))

    async def record_posts(self, request_id: str, posts: list[Post], events: list[Event], *,
                           now: datetime, held: Request | None = None) -> Request | None:
        # Two round trips and no explicit transaction (BEGIN, locking read, UPDATE, COMMIT
        # were four): read the pending request, then one statement stores the copies and
        # events and moves it to posted only if its row is still what was read (else read
        # again: it changed meanwhile). The copies and the move are committed together; the
        # events only while the request is open (its row locked by the same statement).
        post_cols = list(zip(*[post_args(p) for p in posts], strict=True)) or [()] * 7
        event_cols = list(zip(*[event_args(e) for e in events], strict=True)) or [()] * 5
        rows: tuple[Any, ...] = (*map(list, post_cols), *map(list, event_cols))
        n = UPDATE_ARGS
        shown = any(p.ok for p in posts)
        async with self._conn() as conn:
            while True:
                old = await conn.fetchval("SELECT body FROM requests WHERE id=$1 AND state='pending'",
                                          encode_text(request_id)) if shown else None
                request = None if old is None else load_body(old)
                if request is not None:
                    request.state = RequestState.posted
                    request.updated_at = now
                args = write_args(request) if request is not None else (encode_text(request_id), *[None] * (n - 1))
                moved = await conn.fetchval(
                    # `l` locks the open request row (waiting for a close in flight to commit, then
                    # reading it again): a request closed meanwhile gets its copies, never its events
                    "WITH l AS (SELECT 1 FROM requests WHERE id=$1 AND state IN ('pending','posted') FOR UPDATE), "
                    f"p AS (INSERT INTO posts (request_id, channel, target, ref, ok, error, at) "
                    f"  SELECT * FROM unnest(${n + 2}::text[], ${n + 3}::text[], ${n + 4}::text[], ${n + 5}::text[], "
                    f"  ${n + 6}::bool[], ${n + 7}::text[], ${n + 8}::timestamptz[])), "
                    f"e AS (INSERT INTO events (request_id, at, kind, actor, data) SELECT * FROM "
                    f"  unnest(${n + 9}::text[], ${n + 10}::timestamptz[], ${n + 11}::text[], ${n + 12}::text[], "
                    f"  ${n + 13}::text[]) WHERE EXISTS (SELECT 1 FROM l)), "
                    f"u AS ({UPDATE_REQUEST} AND state='pending' AND body=${n + 1}::text AND $2::text IS NOT NULL "
                    "  AND EXISTS (SELECT 1 FROM l) "  # locked before it changes (else `l` skips the row)
                    "  RETURNING 1) "
                    "SELECT count(*) FROM u",
                    *args, old, *rows)
                if request is None or moved:
                    return request
                rows = ([],) * 12  # stored with the first try; now only the move is left

    async def list_posts(self, request_id: str, channel: str | None = None) -> list[Post]:
        sql = "SELECT request_id, channel, target, ref, ok, error, at FROM posts WHERE request_id=$1"
        args: list[Any] = [encode_text(request_id)]
        if channel:
            sql += " AND channel=$2"
            args.append(encode_text(channel))
        async with self._conn() as conn:
            rows = await conn.fetch(sql + " ORDER BY id", *args)
        return [
            Post(request_id=decode_text(r[0]), channel=decode_text(r[1]), target=decode_text(r[2]),
                 ref=json.loads(decode_text(r[3])), ok=r[4], error=decode_opt(r[5]), at=r[6])
            for r in rows
        ]

    # outbox -----------------------------------------------------------------------------
    async def enqueue(self, request_id: str, state: str, due_at: datetime) -> int:
        async with self._conn() as conn:
            item_id = await conn.fetchval(
                "INSERT INTO outbox (request_id, source, state, due_at, created_at) "
                "VALUES ($1, (SELECT source FROM requests WHERE id=$1), $2, $3, $3) RETURNING id",
                encode_text(request_id), encode_text(state), due_at,
            )
        return int(item_id)

    async def claim_due(self, now: datetime, limit: int, lease_s: float) -> list[OutboxItem]:
        if limit <= 0:
            return []
        async with self._conn() as conn:
            rows = await conn.fetch(
                "WITH due AS (SELECT id, due_at FROM outbox WHERE NOT done AND NOT dead AND due_at <= $1 "
                "  ORDER BY due_at, id LIMIT $2 FOR UPDATE SKIP LOCKED), "
                "claimed AS (UPDATE outbox o SET due_at = $3 FROM due WHERE o.id = due.id "
                "  RETURNING o.id, o.request_id, o.state, o.attempts, due.due_at AS due_at, o.created_at, "
                "  o.last_error, o.dead) "
                "SELECT * FROM claimed ORDER BY due_at, id",
                now, limit, now + timedelta(seconds=lease_s),
            )
        return [outbox_item(r) for r in rows]

    async def outbox_done(self, item_id: int) -> None:
        async with self._conn() as conn:
            await conn.execute("UPDATE outbox SET done=TRUE WHERE id=$1", item_id)

    async def stuck_with_answer(self) -> list[str]:
        # found without locking anything (an expired request with no answer stays `expired`
        # for good: there may be many), then each one re-checked under its row lock
        async with self._conn() as conn:
            return [decode_text(r[0]) for r in await conn.fetch(
                f"SELECT id FROM requests WHERE id IN ({STUCK_DELIVERED}) AND {pg_parsed(_HAS_ANSWER)} IS NOT FALSE")]

    async def outbox_stats(self) -> OutboxStats:
        async with self._conn() as conn:
            counts = await conn.fetchrow(
                "SELECT COUNT(*) FILTER (WHERE NOT dead), COUNT(*) FILTER (WHERE dead) FROM outbox WHERE NOT done")
            failing = await conn.fetch(  # ix_outbox_failing: no request row is read
                "SELECT source, COUNT(*) FROM outbox WHERE NOT done AND NOT dead AND attempts>0 GROUP BY source")
        return OutboxStats(pending=int(counts[0]), dead=int(counts[1]),
                           failing={decode_opt(r[0]) or "-": int(r[1]) for r in failing})

    async def outbox_retry(self, item_id: int, *, attempts: int, due_at: datetime, error: str) -> None:
        async with self._conn() as conn:
            await conn.execute(
                "UPDATE outbox SET attempts=$1, due_at=$2, last_error=$3 WHERE id=$4",
                attempts, due_at, encode_text(error), item_id,
            )

    async def outbox_dead(self, item_id: int, *, error: str) -> None:
        async with self._conn() as conn:
            await conn.execute("UPDATE outbox SET dead=TRUE, last_error=$1 WHERE id=$2", encode_text(error), item_id)

    async def list_outbox(self, *, dead: bool | None = None, request_id: str | None = None) -> list[OutboxItem]:
        sql = f"SELECT {_OUTBOX_COLUMNS} FROM outbox WHERE NOT done"
        args: list[Any] = []
        if dead is not None:
            args.append(dead)
            sql += f" AND dead=${len(args)}"
        if request_id is not None:
            args.append(encode_text(request_id))
            sql += f" AND request_id=${len(args)}"
        async with self._conn() as conn:
            rows = await conn.fetch(sql + " ORDER BY id", *args)
        return [outbox_item(r) for r in rows]

    async def next_outbox_due(self) -> datetime | None:
        async with self._conn() as conn:
            due: datetime | None = await conn.fetchval("SELECT MIN(due_at) FROM outbox WHERE NOT done AND NOT dead")
        return due

    # votes ------------------------------------------------------------------------------
    async def add_vote(self, vote: Vote) -> bool:
        async with self._conn() as conn:
            status = await conn.execute(
                "INSERT INTO votes (request_id, voter, value, name, at) VALUES ($1,$2,$3,$4,$5) "
                "ON CONFLICT (request_id, voter) DO NOTHING",
                encode_text(vote.request_id), encode_text(vote.voter), encode_text(vote.value),
                encode_text(vote.name), vote.at,
            )
        return bool(status == "INSERT 0 1")

    async def list_votes(self, request_id: str) -> list[Vote]:
        async with self._conn() as conn:
            rows = await conn.fetch(
                "SELECT request_id, voter, value, name, at FROM votes WHERE request_id=$1 ORDER BY at, seq",
                encode_text(request_id),
            )
        return [Vote(decode_text(r[0]), decode_text(r[1]), decode_text(r[2]), decode_text(r[3]), r[4]) for r in rows]

    # kv ---------------------------------------------------------------------------------
    async def kv_put(self, namespace: str, key: str, value: dict[str, Any], expires_at: datetime | None = None) -> None:
        async with self._conn() as conn:
            await conn.execute(
                "INSERT INTO kv (namespace, key, value, expires_at) VALUES ($1,$2,$3,$4) ON CONFLICT (namespace, key) "
                "DO UPDATE SET value=excluded.value, expires_at=excluded.expires_at",
                encode_text(namespace), encode_text(key), encode_text(json.dumps(value)), expires_at,
            )

    async def kv_get(self, namespace: str, key: str, now: datetime | None = None) -> dict[str, Any] | None:
        async with self._conn() as conn:
            row = await conn.fetchrow(
                "SELECT value, expires_at FROM kv WHERE namespace=$1 AND key=$2",
                encode_text(namespace), encode_text(key),
            )
        if row is None:
            return None
        if not live(row[1], now):
            return None
        value: dict[str, Any] = json.loads(decode_text(row[0]))
        return value

    async def kv_delete(self, namespace: str, key: str) -> bool:
        async with self._conn() as conn:
            status = await conn.execute("DELETE FROM kv WHERE namespace=$1 AND key=$2",
                                        encode_text(namespace), encode_text(key))
        return bool(status != "DELETE 0")

    async def kv_items(self, namespace: str, now: datetime | None = None) -> list[tuple[str, dict[str, Any]]]:
        async with self._conn() as conn:
            rows = await conn.fetch(
                "SELECT key, value FROM kv WHERE namespace=$1 AND (expires_at IS NULL OR $2::timestamptz IS NULL "
                "OR expires_at>=$2) ORDER BY key", encode_text(namespace), now,
            )
        return [(decode_text(r[0]), json.loads(decode_text(r[1]))) for r in rows]

    # timers -----------------------------------------------------------------------------
    async def list_timed(self) -> list[Request]:
        async with self._conn() as conn:
            rows = await conn.fetch("SELECT body FROM requests WHERE next_at IS NOT NULL ORDER BY next_at, id")
        return [load_body(r[0]) for r in rows]

    async def timer_rows(self, *, after: tuple[datetime, str] | None = None, limit: int = 5000) -> list[TimerRow]:
        async with self._conn() as conn:
            if after is None:
                rows = await conn.fetch("SELECT id, next_at, resume FROM requests WHERE next_at IS NOT NULL "
                                        "ORDER BY next_at, id LIMIT $1", limit)
            else:
                rows = await conn.fetch("SELECT id, next_at, resume FROM requests WHERE next_at IS NOT NULL "
                                        "AND (next_at, id) > ($1, $2) ORDER BY next_at, id LIMIT $3",
                                        after[0], encode_text(after[1]), limit)
        return [TimerRow(decode_text(r[0]), r[1], bool(r[2])) for r in rows]

    async def timers_due(self, before: datetime) -> list[tuple[str, datetime]]:
        async with self._conn() as conn:
            rows = await conn.fetch(
                "SELECT id, next_at FROM requests WHERE next_at IS NOT NULL AND next_at <= $1 ORDER BY next_at",
                before)
        return [(decode_text(r[0]), r[1]) for r in rows]


async def _counts(conn: asyncpg.Connection) -> dict[str, int]:
    rows = await conn.fetch("SELECT state, SUM(n) FROM request_counts GROUP BY state HAVING SUM(n) <> 0")
    return {r[0]: int(r[1]) for r in rows}


async def _plain_counts(conn: asyncpg.Connection, query: RequestQuery) -> dict[str, int]:
    """By state from the kept counts, less the requests one of `query.not_voted_by` voted on."""
    counts = wanted_counts(await _counts(conn), query)
    if not (query.not_voted_by and counts):
        return less_voted(counts, ())
    return less_voted(counts, await conn.fetch(
        "SELECT r.state, COUNT(DISTINCT r.id) FROM votes v JOIN requests r ON r.id = v.request_id "
        "WHERE v.voter = ANY($1::text[]) AND r.state = ANY($2::text[]) GROUP BY r.state",
        sorted({encode_text(v) for v in query.not_voted_by}), sorted(counts)))
