"""The events of a request (its audit trail), hash-chained per store (`bridge.store.chain`)."""

from __future__ import annotations

import abc
from datetime import datetime
from typing import Any, Protocol

from bridge.models import Event
from bridge.store.chain import ChainRow, ChainState


class AuditStore(Protocol):
    @abc.abstractmethod
    async def add_event(self, request_id: str, kind: str, actor: str, data: dict[str, Any], at: datetime) -> None: ...

    @abc.abstractmethod
    async def list_events(self, request_id: str) -> list[Event]: ...

    @abc.abstractmethod
    async def chain_state(self) -> ChainState:
        """The chain's head and the checkpoint pruning left."""

    @abc.abstractmethod
    async def chain_page(self, after_seq: int, limit: int) -> list[ChainRow]:
        """Up to `limit` events after `after_seq` in chain order, as stored (what was hashed)."""

    @abc.abstractmethod
    async def unchained_events(self, limit: int) -> list[ChainRow]:
        """Up to `limit` events that have no place in the chain (written behind the bridge's back)."""

    def readable(self, row: ChainRow) -> ChainRow:
        """`row` with its text as the bridge wrote it (a backend that escapes text undoes it)."""
        return row
