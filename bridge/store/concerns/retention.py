"""Pruning closed requests whose outcome needs nothing more."""

from __future__ import annotations

import abc
from datetime import datetime
from typing import Protocol

#: a closed request may be pruned (with what belongs to it) once its outcome needs nothing more:
#: no outbox entry left waiting or dead (an undelivered outcome is kept)
PRUNABLE_STATES = ("cancelled", "delivered", "expired", "failed")
#: the tables whose rows belong to a request (pruned with it, before it); its events are retired
#: from the hash chain instead (`bridge.store.chain`: content cleared, links kept until the cut)
PARTS = ("posts", "votes", "outbox")


class RetentionStore(Protocol):
    @abc.abstractmethod
    async def prune_closed(self, before: datetime, *, limit: int = 500) -> int:
        """Delete up to `limit` closed requests last changed before `before` whose outcome
        needs nothing more (PRUNABLE_STATES, no outbox entry pending or dead), with their
        posts, votes and outbox entries, in one short transaction; their events are retired
        from the hash chain (`bridge.store.chain`). Returns how many."""
