"""Stores: SQLite by default, PostgreSQL for several replicas."""

from __future__ import annotations

from bridge.store.base import OutboxItem, OutboxStats, Store, StoreError, StoreFull, StoreUnavailable, Vote
from bridge.store.pg_support import redact_url


def open_store_from_url(url: str) -> Store:
    """Build (not yet open) the store that `url` names."""
    if url.startswith("sqlite:///"):
        from bridge.store.sqlite import SQLiteStore

        return SQLiteStore.from_url(url)
    if url.startswith(("postgresql://", "postgres://")):
        from bridge.store.postgres import PostgresStore

        store: Store = PostgresStore(url)
        return store
    raise StoreError(f"unsupported store url {redact_url(url)!r}")


__all__ = ["OutboxItem", "OutboxStats", "Store", "StoreError", "StoreFull", "StoreUnavailable", "Vote",
           "open_store_from_url", "redact_url"]
