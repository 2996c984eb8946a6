"""SQLite: the SQL of standing approvals (`bridge.store.concerns.grants`)."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from bridge.models import Responder
from bridge.store.codec import parse_ts, ts
from bridge.store.concerns.grants import GRANT_COLUMNS, Grant
from bridge.store.sqlite_engine import SQLiteEngine

_SELECT = f"SELECT {', '.join(GRANT_COLUMNS)} FROM grants"


def _grant(row: Any) -> Grant:
    fields = dict(zip(GRANT_COLUMNS, row, strict=True))
    for key in ("created_at", "expires_at", "revoked_at"):
        fields[key] = parse_ts(fields[key])
    fields["grantor"] = Responder.model_validate_json(fields["grantor"])
    return Grant.model_validate(fields)


def _row(grant: Grant) -> tuple[Any, ...]:
    values = grant.model_dump()
    values.update(created_at=ts(grant.created_at), expires_at=ts(grant.expires_at),
                  revoked_at=ts(grant.revoked_at), grantor=grant.grantor.model_dump_json())
    return tuple(values[c] for c in GRANT_COLUMNS)


class SQLiteGrants(SQLiteEngine):
    """Standing approvals in the SQLite file."""

    async def add_grant(self, grant: Grant) -> None:
        row = _row(grant)
        await self._run(lambda c: c.execute(
            f"INSERT INTO grants ({', '.join(GRANT_COLUMNS)}) VALUES ({','.join('?' * len(GRANT_COLUMNS))})", row))

    async def get_grant(self, grant_id: str) -> Grant | None:
        row = await self._read(lambda c: c.execute(f"{_SELECT} WHERE id=?", (grant_id,)).fetchone())
        return _grant(row) if row else None

    async def list_grants(self, *, active_at: datetime | None = None, limit: int = 1000) -> list[Grant]:
        if active_at is None:
            sql, args = f"{_SELECT} ORDER BY created_at DESC, id LIMIT ?", (limit,)
        else:
            sql = (f"{_SELECT} WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?) "
                   "ORDER BY created_at DESC, id LIMIT ?")
            args = (ts(active_at), limit)  # type: ignore[assignment]
        rows = await self._read(lambda c: c.execute(sql, args).fetchall())
        return [_grant(r) for r in rows]

    async def grants_for(self, tool: str, source: str, route: str, now: datetime) -> list[Grant]:
        rows = await self._read(lambda c: c.execute(
            f"{_SELECT} WHERE tool=? AND source=? AND route=? AND revoked_at IS NULL "
            "AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id LIMIT 200",
            (tool, source, route, ts(now))).fetchall())
        return [_grant(r) for r in rows]

    async def revoke_grant(self, grant_id: str, *, by: str, at: datetime) -> Grant | None:
        def txn(conn: sqlite3.Connection) -> Any:
            conn.execute("UPDATE grants SET revoked_at=?, revoked_by=? WHERE id=? AND revoked_at IS NULL",
                         (ts(at), by, grant_id))
            return conn.execute(f"{_SELECT} WHERE id=?", (grant_id,)).fetchone()

        row = await self._run(txn)
        return _grant(row) if row else None
