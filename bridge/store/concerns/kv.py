"""A small key/value space for adapters (Telegram callback tokens, Slack cache...)."""

from __future__ import annotations

import abc
from datetime import datetime
from typing import Any, Protocol


def live(expires_at: Any, now: Any) -> bool:
    """An entry is read until its expiry has passed `now` (None on either side: no expiry)."""
    return now is None or expires_at is None or expires_at >= now


class KVStore(Protocol):
    @abc.abstractmethod
    async def kv_put(
        self, namespace: str, key: str, value: dict[str, Any], expires_at: datetime | None = None
    ) -> None: ...

    @abc.abstractmethod
    async def kv_get(self, namespace: str, key: str, now: datetime | None = None) -> dict[str, Any] | None: ...

    @abc.abstractmethod
    async def kv_delete(self, namespace: str, key: str) -> bool:
        """Remove the entry; True only for the caller that removed it (a claim among replicas)."""

    @abc.abstractmethod
    async def kv_items(self, namespace: str, now: datetime | None = None) -> list[tuple[str, dict[str, Any]]]:
        """Every entry of a namespace (not expired at `now`), by key. For small namespaces."""
