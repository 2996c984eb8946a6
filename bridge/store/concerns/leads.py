"""Roles only one replica may hold (Telegram long polling)."""

from __future__ import annotations

from typing import Protocol


class LeadStore(Protocol):
    async def try_lead(self, role: str) -> bool:
        """True while this process holds `role` among the processes sharing the store; call
        it again to check that it still does. A store that is not shared: always True."""
        return True

    async def resign(self, role: str) -> None:
        """Give `role` up (on stop) so that another replica takes it at once: nothing to give
        up unless shared."""
