"""Durable write-back: every outcome goes through the store's outbox until the engine has it.

Delivery starts the moment an answer is committed (`kick`), not on a polling tick; failures
are retried with exponential backoff and jitter until `delivery.give_up_after`, then the
request is marked `failed` with the last error. Entries survive restarts (they are rows).
A success marks the entry done and the request `delivered` in one transaction; a start
first heals requests an older bridge left `answered` after a crash between the two.
While the store fails (full, gone), the loop waits and tries again: the store reports the
fault to the health registry, once.

One delivery may take `delivery.timeout`, or as long as its source says it needs: a source
may set `delivery_timeout` (a timedelta) when its engine answers a write-back only after
the run has gone on (Teal answers a resume after the agent's whole turn). The entry's
lease is then pushed out to match, so no other worker takes it meanwhile.

What it costs (issue 34): the request an answer just closed is handed over in memory with the
kick (`closed`), so its first delivery reads no row back and parses no JSON; the entry is still
claimed from the store first (the lease: a crash before the callback leaves the entry to the next
start or a replica). A round that claimed fewer entries than it may run at once does not claim
again at once: nothing else was due, and whatever becomes due kicks it (an answer, a retry
planned here) or is found by the safety net (another process's entries, expired leases).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import OrderedDict
from datetime import datetime, timedelta
from typing import Any

from bridge.config_daemon import DeliverySettings
from bridge.crypto import SecretLost
from bridge.models import Answer, Request, RequestState
from bridge.ports import Clock, DeliveryError, Outcome
from bridge.service import BridgeService
from bridge.store.base import OutboxItem, Store, StoreError

log = logging.getLogger("hitl_bridge.outbox")

NOT_KEPT = "[not kept]"
STORE_RETRY_S = 1.0  # the store failed: wait this long before the next round
LEASE_MARGIN_S = 30  # a claimed entry stays leased this long past its delivery's time limit
FRESH_KEPT = 256  # closed requests kept in memory for their first delivery (the oldest go first)


class Outbox:
    def __init__(self, service: BridgeService, settings: DeliverySettings) -> None:
        self.service = service
        self.store: Store = service.store
        self.clock: Clock = service.clock
        self.settings = settings
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._inflight: dict[asyncio.Task[Any], OutboxItem] = {}
        self.delivered = 0
        self.retried = 0
        self.dead = 0
        self._fresh: OrderedDict[str, Request] = OrderedDict()  # closed here, not yet delivered
        self._next_due: datetime | None = None  # the earliest due entry the store last named
        service.on_answered.append(self.closed)

    def kick(self) -> None:
        self._wake.set()

    def closed(self, request: Request) -> None:
        """`request` was just closed (or queued again) here, its entry committed: keep the copy
        for its first delivery, and start delivering."""
        self._fresh[request.id] = request
        self._fresh.move_to_end(request.id)
        while len(self._fresh) > FRESH_KEPT:
            self._fresh.popitem(last=False)
        self.kick()

    def _fresh_copy(self, item: OutboxItem) -> Request | None:
        """The copy `closed` kept of the request whose commit made `item` (the entry is made in
        the transaction that stamps the request's `updated_at`: same instant), else None."""
        request = self._fresh.pop(item.request_id, None)
        if request is None or item.attempts or request.updated_at != item.created_at:
            return None
        return request

    async def run(self) -> None:
        """Deliver due entries until cancelled."""
        try:
            await self.heal()
            while True:
                try:
                    await self._round()
                except StoreError as exc:  # reported to the health registry by the store itself
                    log.debug("outbox round failed: %s", exc)
                    await asyncio.sleep(STORE_RETRY_S)
        finally:
            await self._release_inflight()

    async def heal(self) -> None:
        """Requests left `answered` with a delivery that succeeded (see the module docstring)."""
        while True:
            try:
                healed = await self.store.heal_deliveries(self.clock.now())
                break
            except StoreError:
                await asyncio.sleep(STORE_RETRY_S)
        if healed:
            log.warning("%d request(s) were left answered although their delivery had succeeded "
                        "(a crash before this version); now delivered: %s", len(healed), ", ".join(healed[:20]))

    async def _round(self) -> None:
        """Start the due deliveries, or wait until the next one is due (or a kick)."""
        lease = self.settings.timeout.total_seconds() + LEASE_MARGIN_S
        self._wake.clear()
        await self._slots.acquire()
        self._slots.release()
        items = await self.store.claim_due(self.clock.now(), limit=self.settings.concurrency, lease_s=lease)
        for item in items:
            await self._slots.acquire()
            task = asyncio.create_task(self._deliver_guarded(item))
            self._inflight[task] = item
            task.add_done_callback(self._forget)
        if len(items) == self.settings.concurrency:
            return  # maybe more are due: claim again once a slot is free
        if not items:  # idle: ask the store when the next entry is due (a retry, a lease ending)
            self._next_due = await self.store.next_outbox_due()
        # safety net for entries added by another process: replicas sharing the
        # store (checked every second), or the CLI while this daemon was not answering
        wait = 1.0 if self.store.shared else 5.0
        if self._next_due is not None:
            wait = max(0.0, min(wait, (self._next_due - self.clock.now()).total_seconds()))
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can turn a cancel that
            # arrives with the timeout into TimeoutError, and stop() then waits forever
            async with asyncio.timeout(wait):
                await self._wake.wait()
        except TimeoutError:
            pass

    def _forget(self, task: asyncio.Task[Any]) -> None:
        self._inflight.pop(task, None)

    async def _release_inflight(self) -> None:
        """On stop, hand back the claims of deliveries cut short: otherwise the entry stays
        leased for `delivery.timeout` + 30 s and the next start (or a replica) waits that long."""
        cut_short = dict(self._inflight)
        for task in cut_short:
            task.cancel()
        await asyncio.gather(*cut_short, return_exceptions=True)
        now = self.clock.now()
        for task, item in cut_short.items():
            if not task.cancelled():
                continue  # it finished on its own and recorded its result
            try:
                await self.store.outbox_retry(item.id, attempts=item.attempts, due_at=now,
                                              error=item.last_error or "interrupted by shutdown")
            except Exception:
                log.warning("could not release outbox entry %s; it is retried when its lease ends",
                            item.id)

    async def _deliver_guarded(self, item: OutboxItem) -> None:
        try:
            await self.deliver(item)
        except StoreError as exc:  # the entry stays leased, then is tried again; the store told the health
            log.debug("outbox entry %s: %s", item.id, exc)
        except Exception:
            log.exception("outbox entry %s crashed", item.id)
        finally:
            self._slots.release()

    async def deliver(self, item: OutboxItem) -> None:
        request = self._fresh_copy(item) or await self.store.get_request(item.request_id)
        if request is None:
            await self.store.outbox_dead(item.id, error="request no longer exists")
            return
        source = self.service.sources.get(request.source)
        limit = self.limit(source)
        if limit > self.settings.timeout:  # claimed with the default lease: make it last the whole delivery
            await self.store.outbox_retry(item.id, attempts=item.attempts, error=item.last_error or "",
                                          due_at=self.clock.now() + limit + timedelta(seconds=LEASE_MARGIN_S))
        try:
            if source is None:
                raise DeliveryError(f"no source named {request.source!r} is configured", permanent=True)
            outcome = Outcome(request=request, state=item.state, answer=self._open_answer(request),
                              receipt=await self.service.notary.receipt(request, item.state))
            await asyncio.wait_for(source.deliver(outcome), timeout=limit.total_seconds())
        except asyncio.CancelledError:
            raise
        except (Exception, TimeoutError) as exc:
            await self._failed(item, request, exc, limit)
            return
        await self._succeeded(item, request)

    def limit(self, source: object) -> timedelta:
        """How long one delivery to `source` may take: its own `delivery_timeout` when it
        sets one, else `delivery.timeout`."""
        own = getattr(source, "delivery_timeout", None)
        if isinstance(own, timedelta) and own > timedelta(0):
            return own
        return self.settings.timeout

    def _open_answer(self, request: Request) -> Answer | None:
        if request.answer is None:
            return None
        try:
            values = {k: self.service.secrets.open(v) for k, v in request.answer.values.items()}
        except SecretLost as exc:
            raise DeliveryError(str(exc), permanent=True) from None
        if any(v == NOT_KEPT for k, v in values.items() if k in request.secret_question_ids):
            raise DeliveryError("the secret answer was not kept after its first delivery; ask again",
                                permanent=True)
        return request.answer.model_copy(update={"values": values})

    async def _succeeded(self, item: OutboxItem, request: Request) -> None:
        """Entry done, request delivered (when it has an answer), the event, and a secret
        not kept after its delivery: one transaction, so a crash leaves all or nothing."""
        now = self.clock.now()
        forget = None
        if not self.service.secrets.persistent and request.answer and request.secret_question_ids:
            values = {k: (NOT_KEPT if k in request.secret_question_ids else v)
                      for k, v in request.answer.values.items()}
            forget = request.answer.model_copy(update={"values": values})
        updated = await self.store.finish_delivery(
            item.id, request.id, now=now, answer=forget,
            event=self.service._event(request.id, "delivered", request.source, outcome=item.state,
                                      attempts=item.attempts + 1))
        self.delivered += 1
        self.service.lifecycle.delivered(request, item.state, item.attempts + 1)
        if updated is not None:
            self.service.changes.publish(updated)

    async def _failed(self, item: OutboxItem, request: Request, exc: BaseException, limit: timedelta) -> None:
        now = self.clock.now()
        error = str(exc) or type(exc).__name__
        if isinstance(exc, TimeoutError):
            error = f"no reply within {limit.total_seconds():g} s"
        permanent = isinstance(exc, DeliveryError) and exc.permanent
        attempts = item.attempts + 1
        age = now - item.created_at
        if permanent or age >= self.settings.give_up_after:
            self.dead += 1
            await self.store.outbox_dead(item.id, error=error)
            self.service.lifecycle.delivery_failed(request, error, attempts, final=True)
            updated = await self.store.transition(
                request.id, {RequestState.answered, RequestState.expired}, RequestState.failed,
                event=self.service._event(request.id, "delivery_failed", request.source,
                                          error=error, attempts=attempts, final=True),
                error=f"delivery failed: {error}", now=now,
            )
            if updated is None:
                await self.store.add_event(request.id, "delivery_failed", request.source,
                                           {"error": error, "attempts": attempts, "final": True}, now)
            else:
                self.service.changes.publish(updated)
            return
        self.retried += 1
        delay = self.backoff(attempts)
        due = min(now + delay, item.created_at + self.settings.give_up_after)
        await self.store.outbox_retry(item.id, attempts=attempts, due_at=due, error=error)
        self._next_due = due if self._next_due is None else min(self._next_due, due)
        await self.store.add_event(request.id, "delivery_retry", request.source,
                                   {"error": error, "attempts": attempts, "next_at": due.isoformat()}, now)
        self.service.lifecycle.delivery_failed(request, error, attempts, final=False,
                                               retry_in=delay.total_seconds())
        self.kick()  # re-plan the wait: the retry may be due sooner than the loop's current timeout

    def backoff(self, attempts: int) -> timedelta:
        base = self.settings.first_retry.total_seconds() * (2 ** min(attempts - 1, 30))
        capped = min(base, self.settings.max_backoff.total_seconds())
        return timedelta(seconds=capped * random.uniform(0.8, 1.2))


__all__ = ["Outbox"]
