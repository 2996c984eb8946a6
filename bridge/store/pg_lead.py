"""Roles only one replica may hold at a time (Telegram long polling: Telegram refuses a
second `getUpdates`), held as PostgreSQL session advisory locks.

Each held role keeps its own connection, outside the pool: the lock lives as long as that
session. When the holder stops, it closes the session and another replica takes the role
at its next try; when the holder dies or loses the database, PostgreSQL ends the session
and frees the lock, and the holder finds out at its next check.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import urllib.parse
from typing import Any

import asyncpg

log = logging.getLogger("hitl_bridge.store")

CHECK_TIMEOUT_S = 5.0


def lock_key(namespace: str, role: str) -> int:
    """A stable signed 64-bit key (pg_advisory_lock's bigint). Advisory locks are per
    database: `namespace` (the store's search_path) keeps bridges in other schemas apart."""
    digest = hashlib.sha256(f"hitl-bridge:{namespace}:{role}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def namespace_of(dsn: str) -> str:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(dsn).query)).get("search_path", "")


class AdvisoryLeads:
    def __init__(self, dsn: str, connect: dict[str, Any]) -> None:
        self.dsn = dsn
        self.connect = connect  # asyncpg.connect keyword arguments (timeout, server settings)
        self.namespace = namespace_of(dsn)
        self._held: dict[str, asyncpg.Connection] = {}
        #: one check of a role at a time: its session is one connection, which asyncpg lets run
        #: one query at a time (two callers at once made the second see the first's failure)
        self._checking: dict[str, asyncio.Lock] = {}

    async def try_lead(self, role: str) -> bool:
        async with self._checking.setdefault(role, asyncio.Lock()):
            return await self._try_lead(role)

    async def _try_lead(self, role: str) -> bool:
        conn = self._held.get(role)
        if conn is not None:
            try:
                await conn.fetchval("SELECT 1", timeout=CHECK_TIMEOUT_S)
                return True
            except Exception as exc:
                self._held.pop(role, None)
                conn.terminate()
                log.warning("lost the %s role: its database session failed (%s)", role, type(exc).__name__)
                return False
        try:
            conn = await asyncpg.connect(self.dsn, **self.connect)
        except Exception as exc:
            log.warning("cannot try the %s role: %s", role, str(exc) or type(exc).__name__)
            return False
        try:
            held = bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", lock_key(self.namespace, role),
                                            timeout=CHECK_TIMEOUT_S))
        except Exception:
            held = False
        if not held:
            with contextlib.suppress(Exception):
                await conn.close(timeout=CHECK_TIMEOUT_S)
            return False
        self._held[role] = conn
        return True

    async def resign(self, role: str) -> None:
        async with self._checking.setdefault(role, asyncio.Lock()):
            await self._resign(role)

    async def _resign(self, role: str) -> None:
        conn = self._held.pop(role, None)
        if conn is not None:
            try:
                await conn.close(timeout=CHECK_TIMEOUT_S)  # ending the session frees the lock
            except Exception:
                conn.terminate()

    async def close(self) -> None:
        for role in list(self._held):
            await self.resign(role)
