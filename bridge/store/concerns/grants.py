"""Standing approvals (grants): what a person allowed beyond one call, until when, and who
revoked it. Read on every decision (never cached), so that a revocation holds for the very
next call on every replica."""

from __future__ import annotations

import abc
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel

from bridge.models import Responder

#: the columns of the `grants` table, in order (both backends)
GRANT_COLUMNS = ("id", "scope", "pattern", "tool", "source", "session", "route", "granted_by", "grantor", "via",
                 "request_id", "created_at", "expires_at", "revoked_at", "revoked_by")


class Grant(BaseModel):
    """One standing approval, as stored."""

    id: str
    #: session, span or always (bridge.policy.GrantScope)
    scope: str
    #: the permission rule it allows (`Bash(npm test:*)`, `Edit(//srv/app/src/**)`, `mcp__fs__read`)
    pattern: str
    tool: str
    source: str
    #: for scope `session`: the session it is limited to
    session: str | None = None
    route: str
    #: the grantor's handle (`slack:U…`, `api:ops`)
    granted_by: str
    #: the grantor as they answered (their person, a relay): the grant decides only requests
    #: they would be admitted to answer
    grantor: Responder
    #: the channel they granted it through
    via: str
    #: the request whose approval made it
    request_id: str
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    revoked_by: str | None = None

    def active(self, now: datetime) -> bool:
        """Not revoked, and `now` is before its expiry (it stops exactly at `expires_at`)."""
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)

    @property
    def answered_by(self) -> str:
        return f"grant:{self.id}"


class GrantStore(Protocol):
    @abc.abstractmethod
    async def add_grant(self, grant: Grant) -> None: ...

    @abc.abstractmethod
    async def get_grant(self, grant_id: str) -> Grant | None: ...

    @abc.abstractmethod
    async def list_grants(self, *, active_at: datetime | None = None, limit: int = 1000) -> list[Grant]:
        """Newest first; with `active_at`, only those in force then."""

    @abc.abstractmethod
    async def grants_for(self, tool: str, source: str, route: str, now: datetime) -> list[Grant]:
        """The grants in force at `now` for this tool, source and route (read, never cached)."""

    @abc.abstractmethod
    async def revoke_grant(self, grant_id: str, *, by: str, at: datetime) -> Grant | None:
        """Revoke it (kept, with who and when); an already revoked grant is returned as it
        is; None when there is no such grant."""
