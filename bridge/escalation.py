"""What a due timer does to one request: remind, escalate, apply the deadline.

Every action first claims its effect in the store, in one compare-and-set on the instant
that fired (`Store.modify_request`): the new timer instants, the audit event, and a
*step* (`TimerStep`: what to post to whom, with a lease). Then it does the channel work in
the background and removes the step. When several replicas hold the same request's timers,
exactly one of them claims a reminder or an escalation level; the others see the new
instants and re-arm.

The step covers the gap between the claim and the post: the replica that claimed it
renews its lease while it works. If that replica dies, the lease runs out and any replica
takes the step over and carries it out (on a store that is not shared, the next start
does at once). So no reminder or escalation is lost, and none is posted twice by two live
replicas; a step is repeated only when its replica dies after the platform took the post
and before the step was removed (the same one-call window as every post, DESIGN §6).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import Sequence
from datetime import datetime, timedelta

from bridge.config_routes import OnTimeout, Route
from bridge.errors import AlreadyClosed, AnswerRejected
from bridge.models import Event, Request, StepKind, TimerStep
from bridge.service import BridgeService
from bridge.store.base import claim_holds
from bridge.timers import EPSILON, escalation_due, instants_covered, next_reminder, widened_responders

log = logging.getLogger("hitl_bridge.timers")

ACTOR = "timer"
STEP_LEASE = timedelta(seconds=60)  # a step not carried out within this (and not renewed) is taken over
RENEW_EVERY_S = 20.0


class TimerActions:
    """Applies due timers of one request at a time, against the service and store."""

    def __init__(self, service: BridgeService, *, owner: str | None = None) -> None:
        self.service = service
        self.store = service.store
        #: who holds the steps this process claims (shown when another replica takes one over)
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(2)}"
        self.renew_every_s = RENEW_EVERY_S
        self._working: set[tuple[str, str]] = set()  # (request id, step id) being carried out here

    async def fire(self, request: Request, now: datetime) -> Request:
        """Apply every timer of `request` due at `now`; return the request as stored after.

        Order: the deadline first (if it closes the request nothing else is done), then
        the reminder and the escalation in the order of their instants (a reminder due at
        the same instant as a level goes first, to the targets before that level)."""
        route = self.service.route_of(request)
        if request.deadline is not None and request.deadline <= now + EPSILON:
            self.service.lifecycle.timer(request, "deadline")
            request = await self._deadline(request, route, now)
            if not request.is_open:
                return request
        remind_at, escalate_at = request.next_reminder_at, request.next_escalation_at
        remind = remind_at is not None and remind_at <= now + EPSILON
        escalate = escalate_at is not None and escalate_at <= now + EPSILON
        if remind and escalate and escalate_at < remind_at:  # type: ignore[operator]
            request = await self._escalate(request, route, now)  # earlier instant first
            escalate = False
        if remind:
            request = await self._remind(request, route, now)
            # still due unless another replica escalated meanwhile (the remind re-read the request)
            escalate = escalate and request.next_escalation_at == escalate_at
        if escalate and request.is_open:
            request = await self._escalate(request, route, now)
        for step in [s for s in request.timer_steps if s.lease_until <= now + EPSILON]:
            if request.is_open:
                request = await self.take_over(request, step, now)
        return request

    # deadline ---------------------------------------------------------------------------
    async def _deadline(self, request: Request, route: Route, now: datetime) -> Request:
        policy = route.on_timeout or OnTimeout(fail=True)
        deadline = request.deadline
        assert deadline is not None
        when = deadline.strftime("%Y-%m-%d %H:%M:%S UTC")
        try:
            if policy.keep_waiting:
                updated = await self.store.update_request(request.id, now=now, expect={"deadline": deadline},
                                                          deadline=None)
                if updated is None:  # another replica got there first, or it closed
                    return await self._current(request)
                await self.store.add_event(request.id, "deadline_passed", ACTOR,
                                           {"deadline": deadline.isoformat(), "on_timeout": "keep_waiting"}, now)
                self.service.changes.publish(updated)
                return updated
            if policy.answer is not None:
                try:
                    return await self.service.answer_on_timeout(request.id, policy.answer)
                except AnswerRejected as exc:
                    log.warning("request %s: route %s on_timeout.answer is not valid here (%s): failing it",
                                request.id, route.name, exc)
                    return await self.service.expire(
                        request.id, reason=f"no answer by {when}; route {route.name!r} on_timeout.answer "
                                           f"{policy.answer!r} is not a valid answer here ({exc}), so it failed")
            return await self.service.expire(request.id, reason=f"no answer by {when}")
        except AlreadyClosed:  # answered at the same moment: the person won
            current = await self.store.get_request(request.id)
            return current or request

    # reminders --------------------------------------------------------------------------
    async def _remind(self, request: Request, route: Route, now: datetime) -> Request:
        every = route.remind_every
        if every is None:  # the route lost its reminders (config changed): stop
            return await self.store.update_request(request.id, now=now, next_reminder_at=None) or request
        next_at = next_reminder(request.created_at, every, now)
        assert request.next_reminder_at is not None
        passed = instants_covered(request.next_reminder_at, every, now)
        n = request.reminders_sent + 1
        data: dict[str, object] = {"n": n, "targets": request.targets}
        if passed > 1:
            data["missed"] = passed - 1  # downtime: one reminder stands for several periods
        step = self._step(f"remind:{n}", "remind", request.targets, now)
        read = {"next_reminder_at": request.next_reminder_at, "reminders_sent": request.reminders_sent,
                "targets": request.targets}

        def claim(current: Request) -> bool:
            if not claim_holds(current, read):
                return False
            current.next_reminder_at = next_at
            current.reminders_sent = n
            current.timer_steps.append(step)
            return True

        updated = await self.store.modify_request(request.id, claim, now=now,
                                                  events=[self._event(request.id, "reminded", now, data)])
        if updated is None:  # another replica reminded, or it closed
            return await self._current(request)
        self.service.lifecycle.timer(updated, "reminder")
        self.service.lifecycle.reminded(updated)
        self.service.changes.publish(updated)  # live views (the web inbox's badge)
        self._start(updated, step)
        return updated

    async def _current(self, request: Request) -> Request:
        return await self.store.get_request(request.id) or request

    async def _send_reminders(self, request: Request, targets: Sequence[str]) -> None:
        await self.service.reach.fresh(self.service.people)  # who is away, who is on call: as of now
        by_channel: dict[str, list[str]] = {}
        for target in self.service.expand_targets(targets):
            channel = self.service.channel_for(target)
            if channel is not None:
                by_channel.setdefault(channel.name, []).append(target)
        for channel in self.service.channels:
            group = by_channel.get(channel.name)
            if not group:
                continue
            try:
                await channel.remind(request, group)
            except Exception as exc:
                log.exception("channel %s failed to remind %s", channel.name, request.id)
                await self.service.note(request.id, "remind_failed", channel.name,
                                        {"targets": group, "error": f"{type(exc).__name__}: {exc}"})

    # escalation -------------------------------------------------------------------------
    async def _escalate(self, request: Request, route: Route, now: datetime) -> Request:
        due = escalation_due(request, route, now)
        targets = list(request.targets)
        responders = list(request.responders)
        new_targets: list[str] = []
        await self.service.reach.fresh(self.service.people)
        notify: dict[int, list[str]] = {}  # each level's targets, `oncall:` pinned to who is on call now
        pinned: dict[int, dict[str, str]] = {}
        for n in {*due.new_levels, *([due.repeat_level] if due.repeat_level else [])}:
            notify[n], pinned[n] = self.service.reach.pin_on_call(self.service.people, route.escalate[n - 1].notify,
                                                                  now)
        for level in due.new_levels:
            spec = route.escalate[level - 1]
            added = [t for t in notify[level] if t not in targets]
            targets = list(notify[level]) if spec.replace else targets + added
            responders = widened_responders(responders, notify[level], spec.replace)
            new_targets += [t for t in added if t not in new_targets]
        level = max([request.escalation_level, *due.new_levels])
        steps: list[TimerStep] = []
        events: list[Event] = []
        for n in due.new_levels:
            spec = route.escalate[n - 1]
            events.append(self._event(request.id, "escalated", now,
                                      {"level": n, "notify": spec.notify, "replace": spec.replace,
                                       **({"on_call": pinned[n]} if pinned[n] else {})}))
        if due.new_levels:
            steps.append(self._step(f"escalate:{level}", "escalate", new_targets, now))
        if due.repeat_level is not None:
            spec = route.escalate[due.repeat_level - 1]
            events.append(self._event(request.id, "escalation_repeat", now,
                                      {"level": due.repeat_level, "notify": spec.notify}))
            steps.append(self._step(f"page:{due.repeat_level}:{now.timestamp():.0f}", "page",
                                    notify[due.repeat_level], now))
        read = {"next_escalation_at": request.next_escalation_at, "escalation_level": request.escalation_level}

        def claim(current: Request) -> bool:
            if not claim_holds(current, read):
                return False
            current.targets, current.responders = targets, responders
            current.escalation_level, current.next_escalation_at = level, due.next_at
            current.timer_steps.extend(steps)
            return True

        updated = await self.store.modify_request(request.id, claim, now=now, events=events)
        if updated is None:  # another replica escalated, or it closed
            return await self._current(request)
        self.service.lifecycle.timer(updated, "escalation")
        if due.new_levels:
            self.service.lifecycle.escalated(updated, due.new_levels, new_targets)
            self.service.changes.publish(updated)
        for step in steps:
            self._start(updated, step)
        return updated

    # steps: claimed work, carried out under a lease -----------------------------------
    def _step(self, step_id: str, kind: StepKind, targets: Sequence[str], now: datetime) -> TimerStep:
        return TimerStep(id=step_id, kind=kind, targets=list(targets), lease_until=now + STEP_LEASE,
                         owner=self.owner)

    def _event(self, request_id: str, kind: str, now: datetime, data: dict[str, object]) -> Event:
        return Event(id=0, request_id=request_id, at=now, kind=kind, actor=ACTOR, data=data)

    def _start(self, request: Request, step: TimerStep) -> None:
        self.service.background(self._carry_out(request.id, step), f"{step.kind} {request.id}")

    async def take_over(self, request: Request, step: TimerStep, now: datetime) -> Request:
        """Claim `step`, whose replica did not finish it within its lease (or, at a start on
        a store no one else uses, never will), and carry it out."""

        if (request.id, step.id) in self._working:
            return request  # still at work here (its renewal failed): not ours to redo

        def take(current: Request) -> bool:
            found = next((s for s in current.timer_steps if s.id == step.id), None)
            if found is None or found.lease_until != step.lease_until or not current.is_open:
                return False  # finished, closed, or another replica took it first
            found.lease_until, found.owner, found.takeovers = now + STEP_LEASE, self.owner, found.takeovers + 1
            return True

        updated = await self.store.modify_request(request.id, take, now=now, events=[self._event(
            request.id, "timer_step_taken_over", now, {"step": step.id, "from": step.owner})])
        if updated is None:
            return await self._current(request)
        log.warning("request %s: %s, claimed by %s, was not carried out within its lease; doing it now",
                    request.id, step.id, step.owner or "another replica")
        taken = next(s for s in updated.timer_steps if s.id == step.id)
        self._start(updated, taken)
        return updated

    async def _carry_out(self, request_id: str, step: TimerStep) -> None:
        """Do the step's channel work, renewing its lease meanwhile; then remove it. If the
        work fails, the step stays and is taken over when its lease ends."""
        key = (request_id, step.id)
        self._working.add(key)
        try:
            work = asyncio.ensure_future(self._perform(request_id, step))
            try:
                while not (await asyncio.wait({work}, timeout=self.renew_every_s))[0]:
                    try:
                        await self._update_step(request_id, step.id, renew=True)
                    except Exception as exc:  # keep working: the post in flight is not undone
                        log.warning("could not renew the lease of %s of %s: %s", step.id, request_id, exc)
            finally:
                if not work.done():
                    work.cancel()
            work.result()
            updated = await self._update_step(request_id, step.id, renew=False)
        finally:
            self._working.discard(key)
        if updated is not None:
            for hook in self.service.on_created:  # its instants changed: the scheduler re-arms
                hook(updated)

    async def _update_step(self, request_id: str, step_id: str, *, renew: bool) -> Request | None:
        now = self.service.clock.now()

        def change(current: Request) -> bool:
            found = next((s for s in current.timer_steps if s.id == step_id and s.owner == self.owner), None)
            if found is None:
                return False  # closed meanwhile, or taken over by another replica
            if renew:
                found.lease_until = now + STEP_LEASE
            else:
                current.timer_steps.remove(found)
            return True

        return await self.store.modify_request(request_id, change, now=now)

    async def _perform(self, request_id: str, step: TimerStep) -> None:
        current = await self.store.get_request(request_id)
        if current is None or not current.is_open:
            return
        if step.kind != "escalate":
            await self._send_reminders(current, step.targets)
            return
        targets = step.targets
        if step.takeovers:  # the replica that died may have posted some of them
            tried = {p.target for p in await self.store.list_posts(request_id)}
            targets = [t for t in self.service.expand_targets(targets) if t not in tried]
        elif self.service.reach.delegations.listing():  # a delegate may hold a copy already (theirs and
            await self.service.reach.fresh(self.service.people)  # the one of the person they stand in for)
            shown = {p.target for p in await self.store.list_posts(request_id) if p.ok}
            targets = [t for t in self.service.expand_targets(targets) if t not in shown]
        if targets:
            await self.service.post(current, targets)
        await self.service.update_channels(current)

    async def repost_escalated(self, request: Request) -> None:
        """At start: post escalation targets that have no copy and no step that will post
        them (a database from before steps: a crash between the claim and the post)."""
        if request.escalation_level == 0 or not request.is_open:
            return
        await self.service.reach.fresh(self.service.people)
        posts = await self.store.list_posts(request.id)
        tried = {p.target for p in posts}
        steps = [t for s in request.timer_steps if s.kind == "escalate" for t in s.targets]
        tried |= set(self.service.expand_targets(steps))
        missing = [t for t in self.service.expand_targets(request.targets) if t not in tried]
        if missing:
            try:
                await self.service.post(request, missing)
            except Exception:
                log.exception("re-posting escalation of %s failed", request.id)
