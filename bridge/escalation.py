"""What a due timer does to one request: remind, escalate, apply the deadline.

Every action first claims its effect in the store (the new timer instants, the audit
event), then does the channel work in the background. The claim is a compare-and-set on
the instant that fired (`update_request(expect=...)`), so when several replicas hold the
same request's timers exactly one of them reminds or escalates; the others find the new
instants and re-arm. A crash between the claim and the channel work can lose one
reminder or one escalation post (the post is redone at the next start, see
`repost_escalated`), never repeat one: nothing fires twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from bridge.config import OnTimeout, Route
from bridge.errors import AlreadyClosed, AnswerRejected
from bridge.models import Request
from bridge.service import BridgeService
from bridge.timers import EPSILON, escalation_due, instants_covered, next_reminder, widened_responders

log = logging.getLogger("hitl_bridge.timers")

ACTOR = "timer"


class TimerActions:
    """Applies due timers of one request at a time, against the service and store."""

    def __init__(self, service: BridgeService) -> None:
        self.service = service
        self.store = service.store

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
        updated = await self.store.update_request(
            request.id, now=now, next_reminder_at=next_at, reminders_sent=request.reminders_sent + 1,
            expect={"next_reminder_at": request.next_reminder_at, "reminders_sent": request.reminders_sent})
        if updated is None:  # another replica reminded, or it closed
            return await self._current(request)
        data: dict[str, object] = {"n": updated.reminders_sent, "targets": updated.targets}
        if passed > 1:
            data["missed"] = passed - 1  # downtime: one reminder stands for several periods
        await self.store.add_event(request.id, "reminded", ACTOR, data, now)
        self.service.lifecycle.timer(updated, "reminder")
        self.service.lifecycle.reminded(updated)
        self.service.changes.publish(updated)  # live views (the web inbox's badge)
        self.service.background(self._send_reminders(updated, updated.targets), f"remind {request.id}")
        return updated

    async def _current(self, request: Request) -> Request:
        return await self.store.get_request(request.id) or request

    async def _send_reminders(self, request: Request, targets: Sequence[str]) -> None:
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
        for level in due.new_levels:
            spec = route.escalate[level - 1]
            added = [t for t in spec.notify if t not in targets]
            targets = list(spec.notify) if spec.replace else targets + added
            responders = widened_responders(responders, list(spec.notify), spec.replace)
            new_targets += [t for t in added if t not in new_targets]
        level = max([request.escalation_level, *due.new_levels])
        updated = await self.store.update_request(
            request.id, now=now, targets=targets, responders=responders,
            escalation_level=level, next_escalation_at=due.next_at,
            expect={"next_escalation_at": request.next_escalation_at, "escalation_level": request.escalation_level})
        if updated is None:  # another replica escalated, or it closed
            return await self._current(request)
        for n in due.new_levels:
            spec = route.escalate[n - 1]
            await self.store.add_event(request.id, "escalated", ACTOR, {
                "level": n, "notify": spec.notify, "replace": spec.replace}, now)
        if due.repeat_level is not None:
            spec = route.escalate[due.repeat_level - 1]
            await self.store.add_event(request.id, "escalation_repeat", ACTOR,
                                       {"level": due.repeat_level, "notify": spec.notify}, now)
            self.service.background(self._send_reminders(updated, spec.notify), f"page {request.id}")
        self.service.lifecycle.timer(updated, "escalation")
        if due.new_levels:
            self.service.lifecycle.escalated(updated, due.new_levels, new_targets)
            self.service.changes.publish(updated)
            self.service.background(self._post_and_update(updated, new_targets), f"escalate {request.id}")
        return updated

    async def _post_and_update(self, request: Request, new_targets: list[str]) -> None:
        if new_targets:
            await self.service.post(request, new_targets)
        await self.service.update_channels(request)

    async def repost_escalated(self, request: Request) -> None:
        """At start: post escalation targets that have no copy yet (a crash between the
        claim and the post)."""
        if request.escalation_level == 0 or not request.is_open:
            return
        posts = await self.store.list_posts(request.id)
        tried = {p.target for p in posts}
        missing = [t for t in self.service.expand_targets(request.targets) if t not in tried]
        if missing:
            try:
                await self.service.post(request, missing)
            except Exception:
                log.exception("re-posting escalation of %s failed", request.id)
