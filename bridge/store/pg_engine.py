"""The PostgreSQL store's engine: an asyncpg pool, its faults and health, and the transaction
that `bridge.store.transactions` runs in (the SQL is `PostgresStore`'s).

Every method is one transaction. The multi-step writes lock the request row
(SELECT … FOR UPDATE, `PostgresSteps`) so concurrent answers from any replica serialise and
exactly one wins. Text goes through `pg_support.encode_text`, so strings PostgreSQL cannot
hold (NUL) still round-trip.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TypeVar

import asyncpg

from bridge.health import Check, Status
from bridge.store.base import (
    ChangeSink,
    StoreError,
    StoreFull,
    StoreUnavailable,
)
from bridge.store.pg_follow import Follower
from bridge.store.pg_lead import AdvisoryLeads
from bridge.store.pg_rows import (
    PostgresSteps,
    migrate,
)
from bridge.store.pg_support import PostgresURL, encode_text, redact_url
from bridge.store.transactions import TransactionalStore, Txn, drive_async

# what a dropped connection looks like (server restart, failover, admin kill)
_LOST = (OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError, asyncpg.InternalClientError,
         asyncpg.AdminShutdownError, TimeoutError)
RECHECK_S = 5.0
T = TypeVar("T")


async def _keep_session(conn: asyncpg.Connection) -> None:
    """The pool's reset of a connection given back: only asyncpg's own (an open transaction
    rolled back, listeners dropped), not its reset query (`RESET ALL; UNLISTEN *; …`), a
    round trip after every store call. Store calls leave no session state: no SET, no
    session advisory lock (leads keep their own connections), no LISTEN, no cursor."""


class PostgresEngine(TransactionalStore):
    """Store on PostgreSQL. `url`: postgresql://user[:password]@host[:port]/db[?search_path=…]."""

    shared = True  # replicas share it

    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        self.url = url
        try:
            self.options = PostgresURL.parse(url)
        except ValueError as exc:
            raise StoreError(f"bad store url: {exc}") from None
        self.connect_timeout = connect_timeout
        self._pool: asyncpg.Pool | None = None
        self._leads = AdvisoryLeads(self.options.dsn, {
            "timeout": connect_timeout, "statement_cache_size": self.options.statement_cache_size,
            "server_settings": self.options.server_settings or None})
        self._recovery: asyncio.Task[None] | None = None
        self.follower: Follower | None = None
        self._following: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"PostgresStore({redact_url(self.url)!r})"

    async def open(self) -> None:
        opts = self.options
        try:
            self._pool = await asyncpg.create_pool(
                opts.dsn, min_size=opts.pool_min, max_size=opts.pool_max, timeout=self.connect_timeout,
                statement_cache_size=opts.statement_cache_size, server_settings=opts.server_settings or None,
                reset=_keep_session,
            )
        except (*_LOST, asyncpg.PostgresError, ValueError) as exc:  # ValueError: a malformed url
            raise StoreError(f"cannot open PostgreSQL store {redact_url(self.url)}: {_reason(exc)}") from None
        try:
            async with self._txn() as conn:
                await migrate(conn)
        except BaseException:
            await self.close()
            raise

    def follow(self, sink: ChangeSink) -> None:
        if self._pool is None or self._following is not None:
            return
        self.follower = Follower(self.options.dsn, self._leads.connect, sink, self.closed_among, self.health)
        self._following = asyncio.get_running_loop().create_task(self.follower.run(), name="store:follow")

    async def closed_among(self, request_ids: Sequence[str]) -> list[str]:
        ids = [encode_text(i) for i in request_ids]
        async with self._conn() as conn:
            rows = await conn.fetch("SELECT id, state FROM requests WHERE id = ANY($1::text[])", ids)
        still_open = {r[0] for r in rows if r[1] in ("pending", "posted")}
        return [i for i, encoded in zip(request_ids, ids, strict=True) if encoded not in still_open]

    async def close(self) -> None:
        following, self._following = self._following, None
        if following is not None:
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following
        if self._recovery is not None:
            self._recovery.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._recovery
            self._recovery = None
        await self._leads.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                await asyncio.wait_for(pool.close(), timeout=10)
            except TimeoutError:
                pool.terminate()

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[asyncpg.Connection]:
        pool = self._pool
        if pool is None:
            raise StoreError("store is not open")
        try:
            async with pool.acquire() as conn:
                try:
                    yield conn
                except _LOST:
                    conn.terminate()  # never hand a half-dead connection out again; the pool replaces it
                    raise
        except _LOST as exc:
            fault: StoreError = StoreUnavailable(f"store unavailable: PostgreSQL connection lost: {_reason(exc)}",
                                                 fix=f"check that the server at {self._where} is up and reachable")
            self.report_fault(fault)
            raise fault from exc
        except asyncpg.PostgresError as exc:
            mapped = self._fault_of(exc)
            if mapped is None:
                raise
            self.report_fault(mapped)
            raise mapped from exc

    def report_fault(self, error: StoreError) -> None:
        super().report_fault(error)
        if self.health is not None and (self._recovery is None or self._recovery.done()):
            self._recovery = asyncio.get_running_loop().create_task(self._until_recovered())

    async def _until_recovered(self) -> None:
        """After a fault, check every RECHECK_S until the store is well, so that the
        recovery is logged (and /readyz is right) even when nobody asks meanwhile."""
        while self.health is not None:
            await asyncio.sleep(RECHECK_S)
            found = await self.check()
            self.health.report(found.component, found.status, found.summary, found.fix)
            if found.ok:
                return

    @property
    def _where(self) -> str:
        return redact_url(self.url).split("?", 1)[0]

    def _fault_of(self, exc: asyncpg.PostgresError) -> StoreError | None:
        state = getattr(exc, "sqlstate", "") or ""
        if state.startswith("53"):  # insufficient resources: disk full, out of memory, too many connections
            return StoreFull(f"store full: {_reason(exc)}",
                             fix=f"free disk space on the PostgreSQL server at {self._where}")
        if state == "25006":  # read-only transaction: a standby, or default_transaction_read_only
            return StoreUnavailable("store read-only: the PostgreSQL server refuses writes",
                                    fix=f"point store.url at the primary (not a standby) of {self._where}")
        return None

    async def check(self) -> Check:
        try:
            async with self._conn() as conn:
                read_only = await conn.fetchval(
                    "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'")
        except StoreError as exc:
            return Check("store", Status.failing, str(exc), exc.fix)
        if read_only:
            return Check("store", Status.failing, "store read-only: the PostgreSQL server refuses writes",
                         f"point store.url at the primary (not a standby) of {self._where}")
        return Check("store", Status.ok, "PostgreSQL store writable")

    @asynccontextmanager
    async def _txn(self) -> AsyncIterator[asyncpg.Connection]:
        async with self._conn() as conn, conn.transaction():
            yield conn

    async def transact(self, txn: Txn[T], *, one_statement: bool = False) -> T:
        if one_statement:  # atomic on its own: no BEGIN … COMMIT round trips around it
            async with self._conn() as conn:
                return await drive_async(txn, PostgresSteps(conn))
        async with self._txn() as conn:
            return await drive_async(txn, PostgresSteps(conn))

    # roles ------------------------------------------------------------------------------
    async def try_lead(self, role: str) -> bool:
        return await self._leads.try_lead(role)

    async def resign(self, role: str) -> None:
        await self._leads.resign(role)


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
