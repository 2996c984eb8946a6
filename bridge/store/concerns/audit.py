"""The events of a request (its audit trail)."""

from __future__ import annotations

import abc
from datetime import datetime
from typing import Any, Protocol

from bridge.models import Event


class AuditStore(Protocol):
    @abc.abstractmethod
    async def add_event(self, request_id: str, kind: str, actor: str, data: dict[str, Any], at: datetime) -> None: ...

    @abc.abstractmethod
    async def list_events(self, request_id: str) -> list[Event]: ...
