"""Store fixtures: every contract test runs against SQLite and a real PostgreSQL server.

PostgreSQL tests get a fresh schema each (named in the store url's `search_path`) in the
database of HITL_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test),
dropped after the test. When the server is unreachable they are skipped with the reason.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import urllib.parse
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite
import asyncpg
import pytest

from bridge.store import Store, open_store_from_url

PG_ADMIN_URL = os.environ.get("HITL_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _probe_postgres(url: str) -> str | None:
    """None when `url` accepts connections, else why not (run in a thread: no loop clash)."""
    parts = urllib.parse.urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 5432), timeout=2):
            pass
    except OSError as exc:
        return f"PostgreSQL not reachable at {parts.hostname}:{parts.port}: {exc}"

    async def connect() -> None:
        conn = await asyncpg.connect(url, timeout=5)
        await conn.close()

    try:
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, connect()).result(timeout=10)
    except Exception as exc:
        return f"PostgreSQL at {parts.hostname}:{parts.port} refused the test connection: {exc}"
    return None


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    """The admin url of the test server, or skip the test with the reason it is unusable."""
    reason = _probe_postgres(PG_ADMIN_URL)
    if reason:
        pytest.skip(reason)
    return PG_ADMIN_URL


def with_search_path(url: str, schema: str) -> str:
    parts = urllib.parse.urlsplit(url)
    query = [*urllib.parse.parse_qsl(parts.query), ("search_path", schema)]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


@pytest.fixture
async def postgres_url(postgres_admin_url: str) -> AsyncIterator[str]:
    """A store url on a brand-new, empty schema; the schema is dropped after the test."""
    schema = f"hitl_test_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(postgres_admin_url)
    try:
        await admin.execute(f'CREATE SCHEMA "{schema}"')
    finally:
        await admin.close()
    try:
        yield with_search_path(postgres_admin_url, schema)
    finally:
        admin = await asyncpg.connect(postgres_admin_url)
        try:
            await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await admin.close()


@dataclass
class Backend:
    """One place to keep a bridge's data: new stores on it share everything (like replicas)."""

    kind: str  # sqlite | postgres
    url: str

    def new_store(self) -> Store:
        return open_store_from_url(self.url)

    async def open_store(self) -> Store:
        store = self.new_store()
        await store.open()
        return store

    async def sql(self, statement: str, *args: Any) -> list[tuple[Any, ...]]:
        """Run raw SQL behind the store's back (to fake an old/new schema and such)."""
        if self.kind == "sqlite":
            async with aiosqlite.connect(self.url.removeprefix("sqlite:///")) as db:
                cursor = await db.execute(statement.replace("$1", "?"), args)
                rows = await cursor.fetchall()
                await db.commit()
                return [tuple(r) for r in rows]
        conn = await asyncpg.connect(self.url)
        try:
            return [tuple(r) for r in await conn.fetch(statement, *args)]
        finally:
            await conn.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", f"sqlite:///{tmp_path}/not-yet/created/bridge.db")
    url: str = request.getfixturevalue("postgres_url")
    return Backend("postgres", url)


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Store]:
    opened = await backend.open_store()
    try:
        yield opened
    finally:
        await opened.close()
