"""Scale, growth: the seeded stores (bench/scale_growth.py measures on them).

Bulk SQL inserts of realistic rows (a request body as the bridge writes it, one audit event
each), not through the API. SQLite files are cached in ~/.cache/hitl-bridge/bench (keyed by
the sizes and the schema); PostgreSQL schemas `growth_*` are seeded once and kept.
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bridge.models import Answer, Question, QuestionKind, Request, RequestState, Responder
from bridge.store.sqlite_rows import migrate

ROOT = Path(__file__).resolve().parents[1]

CACHE = Path.home() / ".cache" / "hitl-bridge" / "bench"
SEED_VERSION = "2"


def _template(state: RequestState, answered: bool) -> str:
    """A body as the bridge stores it, with markers for what differs per row."""
    created = datetime(2001, 1, 1, 1, 1, 1, 111111, tzinfo=UTC)
    deadline = datetime(2002, 2, 2, 2, 2, 2, 222222, tzinfo=UTC)
    request = Request(
        id="r_MARKERID", source="webhook", external_id="ext-MARKERID", title="Deploy api build MARKERID to production?",
        description="Build passed all checks; the canary has been healthy for 30 minutes.\n\n"
                    "- p99 latency 84 ms\n- error rate 0.02 %\n\nRoll it out to every region?",
        questions=[Question(id="ok", kind=QuestionKind.confirm, prompt="Deploy to production?")],
        context={"service": "api", "commit": "9f1c2ab4e5d6", "pipeline": "https://ci.example.com/p/4711",
                 "changes": ["fix retry budget", "raise pool size", "log request ids"]},
        route="deploys", targets=["web"], state=state, created_at=created, updated_at=created,
        deadline=deadline if state in (RequestState.posted, RequestState.pending) else None,
        responders=["web:local"],
    )
    if answered:
        request.answer = Answer(values={"ok": True}, responder=Responder(platform="web", user_id="ana", name="Ana"),
                                via="web", answered_at=created)

    text = request.model_dump_json()
    return text.replace(_iso(created), "MARKERCREATED").replace(_iso(deadline), "MARKERDEADLINE")


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def _ts(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def _rows(created_at: list[datetime], closed: bool, now: datetime, start: int) -> list[tuple[object, ...]]:
    """Rows for requests created at these instants (in time order, as a store fills up: ids
    sort by time too, like the bridge's own)."""
    states = [RequestState.delivered, RequestState.delivered, RequestState.cancelled, RequestState.expired,
              RequestState.failed] if closed else [RequestState.posted]
    templates = {s: _template(s, s is RequestState.delivered) for s in states}
    out = []
    for i, created in enumerate(created_at, start=start):
        state = states[i % len(states)]
        deadline = None if closed else now + timedelta(seconds=random.uniform(86400, 30 * 86400))
        updated = created + timedelta(seconds=random.uniform(1, 600)) if closed else created
        rid = f"{int(created.timestamp() * 1000):013d}{i:08d}"
        body = (templates[state].replace("MARKERID", rid).replace("MARKERCREATED", _iso(created))
                .replace("MARKERDEADLINE", _iso(deadline) if deadline else ""))
        out.append((f"r_{rid}", "webhook", f"ext-{rid}", state.value, "deploys", _ts(created), _ts(updated),
                    _ts(deadline) if deadline else None, body))
    return out


def seed(path: Path, open_count: int, closed_count: int) -> None:
    """Create the store's schema, then insert the rows in big transactions."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("BEGIN")
    migrate(conn)
    conn.execute("COMMIT")
    now = datetime.now(UTC)
    random.seed(19)
    step = 50_000
    for closed, total in ((True, closed_count), (False, open_count)):
        span = (3600.0, 365 * 86400.0) if closed else (0.0, 3600.0)  # the open ones are the newest
        instants = sorted(now - timedelta(seconds=random.uniform(*span)) for _ in range(total))
        base = 0 if closed else closed_count
        for start in range(0, total, step):
            rows = _rows(instants[start:start + step], closed, now, base + start)
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO requests (id, source, external_id, state, route, created_at, updated_at, "
                             "deadline, body) VALUES (?,?,?,?,?,?,?,?,?)", rows)
            conn.executemany("INSERT INTO events (request_id, at, kind, actor, data) VALUES (?,?,?,?,?)",
                             [(r[0], r[5], "created", "webhook", '{"route": "deploys"}') for r in rows])
            conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def seeded(open_count: int, closed_count: int) -> Path:
    """A cached seeded store for these sizes (made once per schema)."""
    schema = (ROOT / "bridge" / "store" / "schema_sqlite.sql").read_bytes()
    key = hashlib.sha256(schema + SEED_VERSION.encode()).hexdigest()[:10]
    path = CACHE / f"growth-{open_count}-{closed_count}-{key}.db"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        for stale in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
            stale.unlink(missing_ok=True)
        began = time.perf_counter()
        seed(partial, open_count, closed_count)
        partial.rename(path)
        print(f"  seeded {open_count:,} open + {closed_count:,} closed in {time.perf_counter() - began:.0f} s",
              file=sys.stderr)
    return path

async def pg_seeded(admin_url: str, open_count: int, closed_count: int) -> str:
    """A store url on a schema seeded once with these sizes (kept between runs)."""
    import asyncpg

    from bridge.store.pg_rows import SCHEMA_DIGEST
    from bridge.store.postgres import PostgresStore

    schema = f"growth_{open_count}_{closed_count}_{SCHEMA_DIGEST[:8]}_{SEED_VERSION}"
    sep = "&" if "?" in admin_url else "?"
    url = f"{admin_url}{sep}search_path={schema}"
    admin = await asyncpg.connect(admin_url)
    try:
        if await admin.fetchval("SELECT 1 FROM information_schema.schemata WHERE schema_name=$1", schema):
            if await admin.fetchval(f'SELECT to_regclass(\'"{schema}".seeded\')') is not None:
                return url
            await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await admin.execute(f'CREATE SCHEMA "{schema}"')
    finally:
        await admin.close()
    store = PostgresStore(url)
    await store.open()
    await store.close()
    conn = await asyncpg.connect(admin_url, server_settings={"search_path": schema})
    began = time.perf_counter()
    try:
        now = datetime.now(UTC)
        random.seed(19)
        for closed, total in ((True, closed_count), (False, open_count)):
            span = (3600.0, 365 * 86400.0) if closed else (0.0, 3600.0)
            instants = sorted(now - timedelta(seconds=random.uniform(*span)) for _ in range(total))
            base = 0 if closed else closed_count
            for start in range(0, total, 50_000):
                rows = [(*r[:5], *(datetime.fromisoformat(str(t)) if t else None for t in r[5:8]), r[8])
                        for r in _rows(instants[start:start + 50_000], closed, now, base + start)]
                await conn.copy_records_to_table("requests", records=rows, columns=[
                    "id", "source", "external_id", "state", "route", "created_at", "updated_at", "deadline", "body"])
                await conn.copy_records_to_table("events", records=[
                    (r[0], r[5], "created", "webhook", '{"route": "deploys"}') for r in rows],
                    columns=["request_id", "at", "kind", "actor", "data"])
        await conn.execute("ANALYZE")
        await conn.execute("CREATE TABLE seeded (at timestamptz)")
    finally:
        await conn.close()
    print(f"  seeded PostgreSQL {open_count:,} open + {closed_count:,} closed in "
          f"{time.perf_counter() - began:.0f} s", file=sys.stderr)
    return url
