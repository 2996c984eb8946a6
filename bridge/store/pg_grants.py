"""PostgreSQL: the SQL of standing approvals (`bridge.store.concerns.grants`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bridge.models import Responder
from bridge.store.concerns.grants import GRANT_COLUMNS, Grant
from bridge.store.pg_engine import PostgresEngine
from bridge.store.pg_support import decode_opt, encode_opt

_SELECT = f"SELECT {', '.join(GRANT_COLUMNS)} FROM grants"
_TIMES = ("created_at", "expires_at", "revoked_at")


def _grant(row: Any) -> Grant:
    fields = {c: (row[i] if c in _TIMES else decode_opt(row[i])) for i, c in enumerate(GRANT_COLUMNS)}
    fields["grantor"] = Responder.model_validate_json(str(fields["grantor"]))
    return Grant.model_validate(fields)


class PostgresGrants(PostgresEngine):
    """Standing approvals in PostgreSQL (read by every replica on every decision)."""

    async def add_grant(self, grant: Grant) -> None:
        values = grant.model_dump()
        values["grantor"] = grant.grantor.model_dump_json()
        args = [values[c] if c in _TIMES else encode_opt(values[c]) for c in GRANT_COLUMNS]
        marks = ",".join(f"${i + 1}" for i in range(len(GRANT_COLUMNS)))
        async with self._conn() as conn:
            await conn.execute(f"INSERT INTO grants ({', '.join(GRANT_COLUMNS)}) VALUES ({marks})", *args)

    async def get_grant(self, grant_id: str) -> Grant | None:
        async with self._conn() as conn:
            row = await conn.fetchrow(f"{_SELECT} WHERE id=$1", encode_opt(grant_id))
        return _grant(row) if row else None

    async def list_grants(self, *, active_at: datetime | None = None, limit: int = 1000) -> list[Grant]:
        async with self._conn() as conn:
            if active_at is None:
                rows = await conn.fetch(f"{_SELECT} ORDER BY created_at DESC, id LIMIT $1", limit)
            else:
                rows = await conn.fetch(
                    f"{_SELECT} WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1) "
                    "ORDER BY created_at DESC, id LIMIT $2", active_at, limit)
        return [_grant(r) for r in rows]

    async def grants_for(self, tool: str, source: str, route: str, now: datetime) -> list[Grant]:
        async with self._conn() as conn:
            rows = await conn.fetch(
                f"{_SELECT} WHERE tool=$1 AND source=$2 AND route=$3 AND revoked_at IS NULL "
                "AND (expires_at IS NULL OR expires_at > $4) ORDER BY created_at, id LIMIT 200",
                encode_opt(tool), encode_opt(source), encode_opt(route), now)
        return [_grant(r) for r in rows]

    async def revoke_grant(self, grant_id: str, *, by: str, at: datetime) -> Grant | None:
        async with self._conn() as conn:
            row = await conn.fetchrow(
                "WITH upd AS (UPDATE grants SET revoked_at=$2, revoked_by=$3 WHERE id=$1 AND revoked_at IS NULL "
                f"RETURNING {', '.join(GRANT_COLUMNS)}) SELECT * FROM upd UNION ALL "
                f"{_SELECT} WHERE id=$1 AND NOT EXISTS (SELECT 1 FROM upd)",
                encode_opt(grant_id), at, encode_opt(by))
        return _grant(row) if row else None
