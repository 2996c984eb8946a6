"""The inbox's search, tab counts and "waiting for me" over many stored requests (prints
figures; asserts nothing).

    .venv/bin/python bench/bench_inbox_search.py [--count 50000] [--open 0.1] [--postgres URL]

Fills a fresh SQLite store (in $TMPDIR) — or a fresh schema of the PostgreSQL server at
`--postgres` — with `--count` requests (a fraction `--open` of them open, realistic titles,
descriptions, context and responders), then times what one inbox page asks the store:
a search in the open tab, a search in "All", the tab counts for a search, and the "waiting
for me" list and its count. Each query runs 20 times; p50 and max are printed in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bridge.models import OPEN_STATES, Question, QuestionKind, Request, RequestState, new_request_id  # noqa: E402
from bridge.store import Store, open_store_from_url  # noqa: E402
from bridge.store.query import RequestQuery  # noqa: E402

WORDS = ("deploy", "payments", "refund", "rotate", "billing", "vendor", "replica", "canary", "invoice",
         "customer", "migration", "cluster", "secret", "webhook", "release", "rollback")
CLOSED = [s for s in RequestState if s not in OPEN_STATES]


def sample(i: int, open_share: float, t0: datetime) -> Request:
    rnd = random.Random(i)
    words = rnd.sample(WORDS, 4)
    state = RequestState.posted if rnd.random() < open_share else rnd.choice(CLOSED)
    return Request(
        id=new_request_id(), title=f"{words[0].capitalize()} {words[1]} #{i}",
        description=f"The agent wants to {words[2]} the {words[3]} service. " * 3,
        context={"ticket": f"SUP-{i}", "service": {"name": f"{words[1]}-api", "replicas": rnd.randint(1, 9)},
                 "notes": " ".join(rnd.choices(WORDS, k=30))},
        responders=rnd.choice([[], ["group:oncall"], ["person:ana"], ["person:bo", "slack:U0CY"]]),
        questions=[Question(id="ok", kind=QuestionKind.confirm, prompt="Go ahead?")],
        state=state, created_at=t0 + timedelta(seconds=i), updated_at=t0 + timedelta(seconds=i),
    )


async def timed(what: str, fn: Callable[[], Awaitable[Any]], runs: int = 20) -> None:
    spans = []
    result: Any = None
    for _ in range(runs):
        started = time.perf_counter()
        result = await fn()
        spans.append((time.perf_counter() - started) * 1000)
    size = len(result) if isinstance(result, list) else sum(result.values())
    print(f"  {what:<40} p50 {statistics.median(spans):7.1f} ms   max {max(spans):7.1f} ms   ({size} found)")


async def run(store: Store, count: int, open_share: float) -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    started = time.perf_counter()
    batch = 500
    for first in range(0, count, batch):
        await asyncio.gather(*(store.create_request(sample(i, open_share, t0))
                               for i in range(first, min(first + batch, count))))
    print(f"  filled {count} requests in {time.perf_counter() - started:.0f} s")
    ana = RequestQuery(states=tuple(OPEN_STATES), responders_any=("person:ana", "group:oncall", "web:ana"),
                       not_voted_by=("person:ana",))
    await timed("search 'canary' in Open (100 rows)",
                lambda: store.find_requests(RequestQuery(states=tuple(OPEN_STATES), text="canary")))
    await timed("search 'SUP-4242' in All (100 rows)", lambda: store.find_requests(RequestQuery(text="SUP-4242")))
    await timed("tab counts for 'canary'", lambda: store.count_requests(RequestQuery(text="canary")))
    await timed("waiting for ana (100 rows)", lambda: store.find_requests(ana))
    await timed("waiting for ana, count", lambda: store.count_requests(ana))
    await timed("Open tab, no search (100 rows)",
                lambda: store.find_requests(RequestQuery(states=tuple(OPEN_STATES))))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--open", type=float, default=0.1, dest="open_share")
    parser.add_argument("--postgres", default="", help="postgresql://… (a fresh schema is made and dropped)")
    args = parser.parse_args()
    if args.postgres:
        import asyncpg

        schema = f"bench_search_{random.randrange(1 << 30):x}"
        admin = await asyncpg.connect(args.postgres)
        await admin.execute(f'CREATE SCHEMA "{schema}"')
        sep = "&" if "?" in args.postgres else "?"
        store = open_store_from_url(f"{args.postgres}{sep}search_path={schema}")
        try:
            await store.open()
            print(f"PostgreSQL, {args.count} requests, {args.open_share:.0%} open")
            await run(store, args.count, args.open_share)
        finally:
            await store.close()
            await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
            await admin.close()
        return
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store_from_url(f"sqlite:///{Path(tmp) / 'bench.db'}")
        await store.open()
        try:
            print(f"SQLite, {args.count} requests, {args.open_share:.0%} open")
            await run(store, args.count, args.open_share)
        finally:
            await store.close()


if __name__ == "__main__":
    asyncio.run(main())
