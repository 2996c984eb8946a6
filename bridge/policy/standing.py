"""Standing approvals as the channels, the API and the CLI see them: list, read, revoke
(`BridgeService` inherits these)."""

from __future__ import annotations

import logging
from typing import Any

from bridge.errors import GrantNotFound
from bridge.ports import Clock
from bridge.store.base import Store
from bridge.store.concerns.grants import Grant

log = logging.getLogger("hitl_bridge.policy")


class StandingApprovals:
    """The grant methods of the bridge, over its store and clock."""

    store: Store
    clock: Clock

    async def note(self, request_id: str, kind: str, actor: str, data: dict[str, Any]) -> None: ...

    async def list_grants(self, *, active_only: bool = True) -> list[Grant]:
        """Newest first; `active_only`: those in force now (not revoked, not expired)."""
        return await self.store.list_grants(active_at=self.clock.now() if active_only else None)

    async def get_grant(self, grant_id: str) -> Grant:
        """The grant (GrantNotFound when there is none)."""
        found = await self.store.get_grant(grant_id)
        if found is None:
            raise GrantNotFound(grant_id)
        return found

    async def revoke_grant(self, grant_id: str, *, actor: str) -> Grant:
        """Revoke it as `actor` (a verified identity): the very next call it would have
        decided is asked of a person, on every replica (grants are read on every decision)."""
        revoked = await self.store.revoke_grant(grant_id, by=actor, at=self.clock.now())
        if revoked is None:
            raise GrantNotFound(grant_id)
        if revoked.revoked_by == actor:
            try:  # on the record of the request that made it (which retention may have removed)
                await self.note(revoked.request_id, "grant_revoked", actor, {"grant": grant_id})
            except Exception:
                log.warning("grant %s revoked; its request %s could not be noted", grant_id, revoked.request_id)
        return revoked

