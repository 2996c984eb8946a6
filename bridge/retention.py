"""Retention: closed requests older than `store.retain_closed` are pruned, with their audit
events, copies, votes and outbox entries.

Only what needs nothing more goes: a request cancelled, delivered, expired or failed, last
changed before the cut-off, with no write-back waiting or dead-lettered (see
`Store.prune_closed`). Never an open request, never an undelivered outcome. The work is
done in small batches (BATCH per transaction, then a pause YIELD times as long as the batch
took), so intake and answers go on meanwhile; a run starts at start-up and then every EVERY. With replicas
(PostgreSQL) one of them prunes: the one holding the `retention` role.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import timedelta

from bridge.ports import Clock
from bridge.store.base import Store, StoreError

log = logging.getLogger("hitl_bridge.retention")

ROLE = "retention"
BATCH = 500  # requests per transaction
PAUSE_S = 0.02  # the least pause between batches
YIELD = 9.0  # ...and at least this many times as long as the batch took: pruning takes ≤ 1/10 of the writer
EVERY = timedelta(minutes=10)


class Retention:
    def __init__(self, store: Store, keep: timedelta, clock: Clock, *,
                 on_pruned: Callable[[int], None] | None = None) -> None:
        self.store = store
        self.keep = keep
        self.clock = clock
        self.on_pruned = on_pruned
        self.pruned = 0  # in this process, since start

    async def run_once(self) -> int:
        """Prune everything past the retention now, batch by batch; returns how many."""
        before = self.clock.now() - self.keep
        total = 0
        while True:
            began = time.perf_counter()
            n = await self.store.prune_closed(before, limit=BATCH)
            took = time.perf_counter() - began
            total += n
            self.pruned += n
            if n and self.on_pruned is not None:
                self.on_pruned(n)
            if n < BATCH:
                break
            await asyncio.sleep(max(PAUSE_S, YIELD * took))  # intake and answers go first
        if total:
            log.info("retention: pruned %d closed request(s) last changed before %s (store.retain_closed: %s)",
                     total, before.isoformat(timespec="seconds"), self.keep)
        return total

    async def tick(self) -> int | None:
        """One round: prune when this process holds the role (None when another one does)."""
        try:
            if not await self.store.try_lead(ROLE):
                return None
            return await self.run_once()
        except StoreError as exc:  # reported by the store; tried again next round
            log.warning("retention: pruning stopped: %s; trying again in %s", exc, EVERY)
        except Exception:
            log.exception("retention: pruning failed; trying again in %s", EVERY)
        return 0

    async def run(self) -> None:
        """A round now and every EVERY until cancelled."""
        while True:
            await self.tick()
            await asyncio.sleep(EVERY.total_seconds())
