"""Store benchmark: SQLite vs PostgreSQL, store calls and HTTP intake (prints figures).

  1. store calls, in-process, 32 concurrent callers: create_request, get_request, transition
     (each request answered by 5 racing callers: exactly one must win), claim_due+outbox_done
     by 2 replicas (no item may be taken twice) → operations/s for each store
  2. intake through `hitl-bridge serve` (own process) on PostgreSQL: N POST /v1/requests by
     16 concurrent clients → requests/s, 5xx count, "database is locked" in the log

PostgreSQL: HITL_BENCH_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test); a fresh
schema per run, dropped after. Usage: .venv/bin/python bench/bench_store.py [--requests 3000]
Targets (core issue): intake ≥ 1,000 requests/s with 0 5xx and 0 "database is locked".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import daemon_process, intake

from bridge.models import Answer, Question, QuestionKind, Request, RequestState, Responder
from bridge.store import Store, open_store_from_url

PG_URL = os.environ.get("HITL_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
OPEN = frozenset({RequestState.pending, RequestState.posted})


def request(n: int) -> Request:
    return Request(id=f"r_bench{n:08d}", title="Deploy api to prod?", external_id=f"bench-{n}",
                   questions=[Question(id="ok", kind=QuestionKind.confirm, prompt="Deploy?")],
                   context={"service": "api", "version": "1.2.3"}, created_at=T0, updated_at=T0,
                   deadline=T0 + timedelta(hours=1))


async def timed(label: str, count: int, concurrency: int, op: Callable[[int], Awaitable[object]]) -> float:
    counter = iter(range(count))

    async def worker() -> None:
        for i in counter:
            await op(i)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    rate = count / (time.perf_counter() - start)
    print(f"  {label:<44} {rate:>9,.0f} ops/s")
    return rate


async def store_calls(name: str, url: str, count: int) -> None:
    print(f"{name}:")
    store, replica = open_store_from_url(url), open_store_from_url(url)
    await store.open()
    await replica.open()
    try:
        await timed(f"create_request ({count})", count, 32, lambda i: store.create_request(request(i)))
        await timed(f"get_request ({count})", count, 32, lambda i: store.get_request(f"r_bench{i:08d}"))
        wins = 0

        async def answer(i: int) -> None:
            nonlocal wins
            target = store if i % 2 else replica
            answer = Answer(values={"ok": "yes"}, responder=Responder(platform="api", user_id=str(i)),
                            via="api", answered_at=T0)
            won = await target.transition(f"r_bench{i // 5:08d}", OPEN, RequestState.answered, answer=answer,
                                          enqueue="answered", now=T0)
            wins += won is not None

        await timed(f"transition, 5 racing per request ({count})", count, 32, answer)
        taken: list[int] = []

        async def drain(target: Store) -> None:
            while batch := await target.claim_due(T0, limit=8, lease_s=60):
                for item in batch:
                    taken.append(item.id)
                    await target.outbox_done(item.id)

        began = time.perf_counter()
        await asyncio.gather(*(drain(t) for t in (store, replica) for _ in range(4)))
        rate = len(taken) / (time.perf_counter() - began)
        print(f"  {'claim_due(8)+outbox_done, 2 replicas x 4':<44} {rate:>9,.0f} items/s")
        left = len(await store.list_outbox())
        print(f"  check: {wins} winners for {count // 5} requests; {len(taken)} delivered, "
              f"{len(taken) - len(set(taken))} taken twice, {left} left")
    finally:
        await store.close()
        await replica.close()


async def pg_schema(create: bool, schema: str) -> None:
    conn = await asyncpg.connect(PG_URL)
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"' if create else f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


def with_schema(schema: str) -> str:
    parts = urllib.parse.urlsplit(PG_URL)
    query = [*urllib.parse.parse_qsl(parts.query), ("search_path", schema)]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


async def serve_intake(url: str, total: int, tmp: str) -> None:
    async with daemon_process(url, tmp) as (base, log):
        rate, e5, other = await intake(base, total, 16)
    text = log.read_text()
    print(f"intake on PostgreSQL via hitl-bridge serve: {total} requests, 16 concurrent clients: {rate:,.0f} "
          f"requests/s, {e5} 5xx, {other} other non-201, {text.count('database is locked')} 'database is locked', "
          f"{text.count('Traceback')} tracebacks   (target ≥ 1,000/s, 0, 0)")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store-ops", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    schema = f"hitl_bench_{secrets.token_hex(4)}"
    schema2 = schema + "_serve"
    with tempfile.TemporaryDirectory() as tmp:
        await store_calls("SQLite (WAL)", f"sqlite:///{tmp}/bench.db", args.store_ops)
        await pg_schema(True, schema)
        await pg_schema(True, schema2)
        try:
            await store_calls("PostgreSQL", with_schema(schema), args.store_ops)
            await serve_intake(with_schema(schema2), args.requests, tmp)
        finally:
            await pg_schema(False, schema)
            await pg_schema(False, schema2)


if __name__ == "__main__":
    asyncio.run(main())
