"""The events' hash chain in PostgreSQL (see `bridge.store.chain`): appended by the deferred
trigger `hitl_chain_event` (schema_postgres.sql); here the start, pruning and reads."""

from __future__ import annotations

import asyncpg

from bridge.store.chain import GENESIS, PG_AT_TEXT, RETIRED, ChainRow, ChainState, link
from bridge.store.transactions import ChainSpan

#: the chain's columns of an event, in ChainRow's order, text as hashed
ROW = f"id, seq, prev_hash, hash, request_id, {PG_AT_TEXT.format(col='at')}, kind, actor, data"


async def start(conn: asyncpg.Connection) -> None:
    """Create the chain head once (in the migration's transaction), chaining the events already
    kept in the order they were written. Later, an unchained event is one written behind the
    bridge's back."""
    if await conn.fetchval("SELECT 1 FROM audit_chain WHERE id=1") is not None:
        return
    rows = await conn.fetch(f"SELECT {ROW} FROM events WHERE seq IS NULL ORDER BY id")
    seq, prev = 0, GENESIS
    links = []
    for row in rows:
        digest = link(prev, *row[4:])
        seq += 1
        links.append((row[0], seq, prev, digest))
        prev = digest
    if links:
        await conn.executemany("UPDATE events SET seq=$2, prev_hash=$3, hash=$4 WHERE id=$1", links)
    await conn.execute("INSERT INTO audit_chain (id, seq, hash, cut_seq, cut_hash) VALUES (1, $1, $2, 0, $3)",
                       seq, prev, GENESIS)


async def retire(conn: asyncpg.Connection, request_ids: list[str]) -> None:
    """Clear these requests' events, keeping their links (`transactions.Retire`)."""
    await conn.execute("UPDATE events SET request_id='', kind=$2, actor='', data='' "
                       "WHERE request_id = ANY($1::text[])", request_ids, RETIRED)


async def ends(conn: asyncpg.Connection) -> ChainSpan:
    head, cut = await conn.fetchrow("SELECT seq, cut_seq FROM audit_chain WHERE id=1 FOR UPDATE")
    first = await conn.fetchval("SELECT seq FROM events WHERE seq > $1 AND kind <> $2 ORDER BY seq LIMIT 1",
                                cut, RETIRED)
    return ChainSpan(int(head), int(cut), None if first is None else int(first))


async def hash_at(conn: asyncpg.Connection, seq: int) -> str | None:
    found: str | None = await conn.fetchval("SELECT hash FROM events WHERE seq=$1", seq)
    return found


async def cut(conn: asyncpg.Connection, after: int, upto: int, digest: str) -> None:
    await conn.execute("DELETE FROM events WHERE seq > $1 AND seq <= $2 AND kind=$3", after, upto, RETIRED)
    await conn.execute("UPDATE audit_chain SET cut_seq=$1, cut_hash=$2 WHERE id=1", upto, digest)


async def state(conn: asyncpg.Connection) -> ChainState:
    row = await conn.fetchrow("SELECT seq, hash, cut_seq, cut_hash FROM audit_chain WHERE id=1")
    return ChainState(int(row[0]), row[1], int(row[2]), row[3]) if row else ChainState(0, GENESIS, 0, GENESIS)


async def page(conn: asyncpg.Connection, after_seq: int, limit: int) -> list[ChainRow]:
    """Up to `limit` chained rows after `after_seq`, in chain order."""
    rows = await conn.fetch(f"SELECT {ROW} FROM events WHERE seq > $1 ORDER BY seq LIMIT $2", after_seq, limit)
    return [ChainRow(*r) for r in rows]


async def unchained(conn: asyncpg.Connection, limit: int) -> list[ChainRow]:
    """Committed rows with no place in the chain (written with the trigger off)."""
    rows = await conn.fetch(f"SELECT {ROW} FROM events WHERE seq IS NULL OR hash IS NULL ORDER BY id LIMIT $1",
                            limit)
    return [ChainRow(*r) for r in rows]
