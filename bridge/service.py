"""The bridge core: the request state machine, between sources, store, channels and outbox."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any

from bridge import answering
from bridge.answering import Actor, closed_error
from bridge.answering.actor import given_on_timeout
from bridge.answering.closed import open_request
from bridge.answering.record import record
from bridge.answering.responders import may_answer
from bridge.answering.values import fits, validated
from bridge.audit.keys import ReceiptKeys
from bridge.audit.receipts import Notary
from bridge.config_routes import Route
from bridge.crypto import SecretBox
from bridge.errors import AnswerRejected, NotFound, NotTheSameRequest
from bridge.fingerprint import fingerprint
from bridge.health import Health
from bridge.lifecycle import Lifecycle
from bridge.models import OPEN_STATES, Event, Post, Request, RequestIn, RequestState, Responder, new_request_id
from bridge.narrowing import check_narrows
from bridge.notify import ChangeFeed
from bridge.people import People, canonical_target
from bridge.policy import GrantChoice, GrantOffer, grant_offers
from bridge.policy.ruleset import RuleSet
from bridge.policy.standing import StandingApprovals
from bridge.policy.verdict import decide, grants_may_decide
from bridge.ports import Channel, Clock, PostResult, Source
from bridge.reach import Reach
from bridge.router import Router
from bridge.rules import Judged, judge, route_in_force, snapshot
from bridge.service_people import ManyAndAway
from bridge.store.base import Store, StoreError
from bridge.store.query import RequestQuery
from bridge.timers import initial_timers
from bridge.waiting import waiting_for

log = logging.getLogger("hitl_bridge")

class BridgeService(ManyAndAway, StandingApprovals):
    """Implements RequestSink and BridgeAPI (bridge.ports); answers alike requests together and
    keeps delegation windows (bridge.service_people); lists and revokes standing approvals
    (bridge.policy.standing)."""

    def __init__(
        self,
        store: Store,
        router: Router,
        secrets: SecretBox,
        clock: Clock,
        channels: Sequence[Channel] = (),
        sources: dict[str, Source] | None = None,
        people: People | None = None,
    ) -> None:
        self.store = store
        self.router = router
        self.people = people or People()
        self.secrets = secrets
        self.clock = clock
        self.channels = list(channels)
        self.sources: dict[str, Source] = dict(sources or {})
        self.changes = ChangeFeed()
        self.health = Health()
        self.lifecycle = Lifecycle(clock)  # a log line per step; metrics listen
        self.reach = Reach(store, clock)  # on-call rotas and delegation windows, applied to targets
        self._tasks: set[asyncio.Task[Any]] = set()
        self.on_answered: list[Any] = []  # callables(request) -> None: outbox kick etc.
        self.on_created: list[Any] = []  # callables(request) -> None: the scheduler arms timers
        self.notary = Notary(ReceiptKeys(store, secrets, clock))  # signs the receipts written back
        #: `policies:` compiled (bridge.policy): swapped whole on reload
        self.policies = RuleSet()
        self._deciding: set[str] = set()  # new requests the verdict step is deciding (never posted)

    # helpers ----------------------------------------------------------------------------
    def background(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        """Run `coro` after the caller is acknowledged; log (never raise) its failure."""

        async def guarded() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except StoreError as exc:  # the store reported it (once): one line, alike for every request
                log.warning("background %s failed: %s", what.split()[0], exc)
            except Exception:
                log.exception("background %s failed", what)

        task = asyncio.get_running_loop().create_task(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for background work (posts, updates) to finish (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _event(self, request_id: str, kind: str, actor: str = "", **data: Any) -> Event:
        return Event(id=0, request_id=request_id, at=self.clock.now(), kind=kind, actor=actor, data=data)

    def channel_for(self, target: str) -> Channel | None:
        return next((c for c in self.channels if c.owns(target)), None)

    def expand_targets(self, targets: Sequence[str]) -> list[str]:
        """`person:` / `group:` targets become each person's handles on configured channels
        (a DM, a private chat, an email); one that reaches nobody stays as it is, so posting
        to it is recorded as a failed copy that says why. Who is on call and who stands in
        for a person away is decided first (bridge.reach)."""
        out: list[str] = []
        for target in self.reach.resolve(self.people, targets):
            reached = None if target.startswith("oncall:") else self.people.targets_of(target)  # nobody on call
            if reached is None:
                out.append(canonical_target(target))
                continue
            reachable = [t for t in reached if self.channel_for(t) is not None]
            out.extend(reachable or [target])
        return list(dict.fromkeys(out))  # one copy per mailbox, however its address was written

    def route_of(self, request: Request) -> Route:
        """The route `request` is judged by: the one it was created under, tightened by the
        running config (bridge.rules)."""
        return route_in_force(request, self.router)

    def judged(self, request: Request) -> Judged:
        return judge(request, self.router, self.people)

    # RequestSink ------------------------------------------------------------------------
    async def submit(
        self,
        request: RequestIn,
        *,
        source: str,
        source_ref: dict[str, Any] | None = None,
        format: str = "native",
        created_by: str | None = None,
    ) -> tuple[Request, bool]:
        """Store `request` (or return the one its `external_id` already names: 201/200).

        A body may only narrow its route (`bridge.narrowing`: LoosensRoute otherwise). An
        `external_id` is the caller's own (the store keys it by `created_by`), and a repeat
        of it is honoured only as a retry of the same request: same route, same content
        (`bridge.fingerprint`); anything else raises NotTheSameRequest."""
        now = self.clock.now()
        stored = Request(
            **request.model_dump(),
            created_by=created_by,
            fingerprint=fingerprint(request),
            id=new_request_id(),
            source=source,
            format="structured" if format == "structured" else "native",
            source_ref=source_ref or {},
            created_at=now,
            updated_at=now,
        )
        route = self.router.choose(stored)
        check_narrows(request, route, self.people, now)
        stored.route = route.name or "default"
        if any(e.startswith("oncall:") for e in [*route.notify, *route.responders]):
            await self.reach.fresh(self.people)  # the rota's feed, read again when stale
        stored.targets, on_call = self.reach.pin_on_call(self.people, route.notify, now)
        if not stored.responders:
            stored.responders = self.reach.pin_on_call(self.people, route.responders, now)[0]
        stored.responders = list(dict.fromkeys(self.people.canonical_entry(e) for e in stored.responders))
        stored.rules = snapshot(stored, route, self.people)  # it is judged by these while open
        initial_timers(stored, route, now)
        event = self._event(
            stored.id, "created", source, route=stored.route, targets=stored.targets,
            external_id=stored.external_id, **({"on_call": on_call} if on_call else {}),
        )
        shown = await self._shown_at_once(stored, route)
        if shown is not None:  # posted in the create's own transaction: nothing is left to send
            return await self._create_shown(stored, event, shown)
        saved, created = await self.store.create_request(stored, event)
        if created:
            self.lifecycle.created(saved)
            self._deciding.add(saved.id)  # shown nowhere yet: its close updates no copy
            try:
                decided = await decide(self, saved)  # a rule or a standing approval, before anyone is asked
            finally:
                self._deciding.discard(saved.id)
            if decided is not None:
                if route.fyi_automatic:
                    self.background(self.post(decided, decided.targets, fyi=True), f"post {saved.id}")
                return decided, created
            self.changes.publish(saved)
            for hook in self.on_created:
                hook(saved)
            self.background(self.post(saved, saved.targets), f"post {saved.id}")
        else:
            self._same_request(saved, stored)
        return saved, created

    async def _shown_at_once(self, request: Request, route: Route) -> list[PostResult] | None:
        """The copies of the new `request` when posting it sends nothing (every target is on a
        channel that `bridge.ports.PostsInStore`, as the web inbox) and no rule or standing approval may
        decide it first (the verdict step would ask a person without reading the store);
        None otherwise: it is stored `pending` and posted after."""
        await self.reach.fresh(self.people)
        targets = self.expand_targets(request.targets)
        by_channel: dict[int, tuple[Callable[[Request, list[str]], list[PostResult]], list[str]]] = {}
        for target in targets:
            channel = self.channel_for(target)
            # the method PostsInStore names (an isinstance check of a Protocol costs more than a create's post)
            copies = getattr(channel, "copies_in_store", None)
            if copies is None:
                return None
            by_channel.setdefault(id(channel), (copies, []))[1].append(target)
        if not by_channel:
            return None
        try:  # the rules only once the channels allow it: a route that sends never evaluates them twice
            rules = self.policies.evaluate(request)
        except Exception:  # the verdict step reports it (policy_error) on the usual path
            return None
        if rules.rule is not None or rules.decides or grants_may_decide(request, route, rules):
            return None
        return [result for copies, group in by_channel.values() for result in copies(request, group)]

    async def _create_shown(self, stored: Request, event: Event, results: list[PostResult]) -> tuple[Request, bool]:
        """Store the new request with its copies (`_shown_at_once`) in one transaction: `posted`
        when a copy is ok, with the events `created` then `posted` (or `post_failed`)."""
        now = stored.created_at
        posts, events = self._posting(stored, results, now)
        if any(r.ok for r in results):
            stored.state = RequestState.posted
        saved, created = await self.store.create_request(stored, event, posts=posts, events_after=events)
        if not created:
            self._same_request(saved, stored)
            return saved, created
        self.lifecycle.created(saved)
        self.lifecycle.posted(saved, [(p.channel, r) for p, r in zip(posts, results, strict=True)])
        self.changes.publish(saved)
        for hook in self.on_created:
            hook(saved)
        return saved, created

    def _posting(self, request: Request, results: Sequence[PostResult],
                 now: datetime) -> tuple[list[Post], list[Event]]:
        """The record of one posting: a copy per result, `post_failed` and `posted` events."""
        posts = []
        for result in results:
            channel = self.channel_for(result.target)
            posts.append(Post(
                request_id=request.id, channel=channel.name if channel else "-", target=result.target,
                ref=result.ref, ok=result.ok, error=result.error, at=now,
            ))
        ok = list(dict.fromkeys(r.target for r in results if r.ok))  # a group target: one copy per member
        failed = {r.target: r.error for r in results if not r.ok}
        events = []
        if failed:
            events.append(self._event(request.id, "post_failed", "", targets=failed))
        if ok:
            events.append(self._event(request.id, "posted", "", targets=ok))
        return posts, events

    @staticmethod
    def _same_request(saved: Request, asked: Request) -> None:
        """Raise NotTheSameRequest unless `asked` is a retry of `saved` (the request its
        external_id names): same creator, same route, same content."""
        differs = []
        if saved.created_by != asked.created_by:
            differs.append("creator")
        if saved.route != asked.route:
            differs.append(f"route ({saved.route!r}, now {asked.route!r})")
        if saved.fingerprint is not None:
            same = saved.fingerprint == asked.fingerprint
        else:  # stored before fingerprints: compared as stored (both with the route's responders filled in)
            same = fingerprint(saved) == fingerprint(asked)
        if not same:
            differs.append("content")
        if differs:
            raise NotTheSameRequest(asked.external_id or "", saved.id, differs)

    async def withdraw(self, source: str, external_id: str, reason: str, *,
                       created_by: str | None = None) -> Request | None:
        request = await self.store.find_by_external_id(source, external_id, created_by)
        if request is None or not request.is_open:
            return request
        return await self._close(request.id, RequestState.cancelled, "withdrawn", source, reason=reason,
                                 deliver=False)

    # posting ----------------------------------------------------------------------------
    async def post(self, request: Request, targets: Sequence[str], *, fyi: bool = False) -> list[PostResult]:
        """Show `request` on `targets` (grouped by channel); record every copy.

        A request closed before its posting starts is shown nowhere (but `fyi`: one a rule or
        a standing approval decided, shown as decided on a route with `fyi_automatic`); one
        closed while its copies go out gets them recorded (no `posted` event after its close:
        the store decides that atomically) and brought up to date at once (they say it is closed)."""
        await self.reach.fresh(self.people)
        if fyi:
            pass
        elif not request.is_open or self.changes.saw_close(request.id):  # else no store read: the
            current = await self.store.get_request(request.id)  # store settles a close seen elsewhere
            if current is None or not current.is_open:
                state = current.state.value if current is not None else "gone"
                return [PostResult(target=t, ok=False, error=f"the request is {state}: not shown") for t in targets]
        by_channel: dict[int, list[str]] = {}
        results: list[PostResult] = []
        for target in self.expand_targets(targets):
            channel = self.channel_for(target)
            if channel is None:
                results.append(PostResult(target=target, ok=False,
                                          error="no channel configured for this target"))
                continue
            by_channel.setdefault(id(channel), []).append(target)
        for channel in self.channels:
            group = by_channel.get(id(channel))
            if not group:
                continue
            try:
                results.extend(await channel.post(request, group))
            except Exception as exc:  # a channel bug must not lose the request
                log.exception("channel %s failed to post %s", channel.name, request.id)
                results.extend(PostResult(target=t, ok=False, error=f"{type(exc).__name__}: {exc}")
                               for t in group)
        now = self.clock.now()
        posts, events = self._posting(request, results, now)
        ok = [r for r in results if r.ok]
        self.lifecycle.posted(request, [(p.channel, r) for p, r in zip(posts, results, strict=True)])
        updated = await self.store.record_posts(request.id, posts, events, now=now, held=request)
        if updated is not None:
            self.changes.publish(updated)
        elif ok:  # already posted earlier (escalation), or closed meanwhile: bring the new copy up to date
            current = await self.store.get_request(request.id)
            if current is not None and not current.is_open:
                log.info("request %s closed (%s) while it was being posted: updating its copies",
                         request.id, current.state.value)
                self.background(self.update_channels(current), f"update {request.id}")
        return results

    def updating_channels(self) -> list[Channel]:
        """The channels whose copies need an `update` when a request changes (see Channel.update)."""
        return [c for c in self.channels if getattr(c, "updates_copies", True)]

    async def update_channels(self, request: Request) -> None:
        """Bring every copy of `request` up to date on every channel that showed it (no store
        read when no configured channel has copies to update)."""
        channels = self.updating_channels()
        if not channels:
            return
        posts = await self.store.list_posts(request.id)
        names = {p.channel for p in posts if p.ok}
        for channel in channels:
            if channel.name in names:
                try:
                    await channel.update(request)
                except Exception:
                    log.exception("channel %s failed to update %s", channel.name, request.id)

    async def repost_pending(self) -> int:
        """At start: post requests stored but never shown (a crash between store and post)."""
        await self.reach.fresh(self.people)  # who is away, who is on call: before "missing" is judged
        count = 0
        async for page in self.store.pages(RequestQuery(states=(RequestState.pending,))):  # a page at a time
            for request in page:
                posts = await self.store.list_posts(request.id)
                shown = {p.target for p in posts if p.ok}
                missing = [t for t in self.expand_targets(request.targets) if t not in shown]
                if missing:
                    self.background(self.post(request, missing), f"repost {request.id}")
            count += len(page)
        return count

    # BridgeAPI --------------------------------------------------------------------------
    async def get(self, request_id: str) -> Request | None:
        return await self.store.get_request(request_id)

    async def note(self, request_id: str, kind: str, actor: str, data: dict[str, Any]) -> None:
        await self.store.add_event(request_id, kind, actor, data, self.clock.now())

    async def is_allowed(self, request: Request, responder: Responder, *, via: str) -> bool:
        return await may_answer(self, request, Actor.of(responder, via))

    async def waiting_for(self, responder: Responder, *, channel: str, here: Sequence[str] = (),
                          named: bool = True) -> list[Request]:
        return await waiting_for(self.store, self.is_allowed, responder, channel=channel, here=here, named=named)

    async def answer(
        self,
        request_id: str,
        responder: Responder,
        values: dict[str, Any],
        *,
        via: str,
        reason: str | None = None,
        grant: GrantChoice | None = None,
        batch: str | None = None,
        known: Request | None = None,
    ) -> Request:
        """Answer as `responder` through the channel `via` (bridge.answering: the checks);
        `grant`: the standing approval chosen with an approving answer (bridge.policy);
        `batch`: the batch it is one item of (bridge.batches); `known`: the request as the
        caller has just read it (spares a second read)."""
        return await answering.answer(self, request_id, Actor.of(responder, via), values, reason=reason,
                                      grant=grant, batch=batch, known=known)

    def grant_offers(self, request: Request) -> list[GrantOffer]:
        return grant_offers(request, self.route_of(request))

    def after_close(self, request: Request) -> None:
        for hook in self.on_answered:
            hook(request)
        self.changes.publish(request)
        if request.id not in self._deciding and self.updating_channels():
            self.background(self.update_channels(request), f"update {request.id}")

    async def cancel(self, request_id: str, *, actor: str, reason: str = "", claimed: str | None = None) -> Request:
        """Cancel as `actor` (a verified identity); `claimed` (who the caller says acts) is
        only kept as a note in the event."""
        note: dict[str, Any] = {"claimed_actor": claimed} if claimed else {}
        return await self._close(request_id, RequestState.cancelled, "cancelled", actor, reason=reason, **note)

    async def expire(self, request_id: str, *, reason: str = "deadline passed") -> Request:
        """The last deadline passed and the route says fail: the engine gets a failure."""
        return await self._close(request_id, RequestState.expired, "expired", "timeout", reason=reason)

    async def answer_on_timeout(self, request_id: str, value: Any) -> Request:
        """Apply `on_timeout: {answer: ...}`: recorded as answered by `timeout`."""
        request = await open_request(self.store, request_id)
        # the value answers every question it fits; an optional question it does not fit (the
        # edit of a tool call's arguments next to its Approve/Reject) stays unanswered
        values = {q.id: value for q in request.questions if q.required or fits(q, value)}
        return await record(self, request, Actor.on_timeout(), validated(request, values),
                            reason="deadline passed", to_state=RequestState.expired)

    async def _close(self, request_id: str, state: RequestState, kind: str, actor: str, *,
                     reason: str, deliver: bool = True, **note: Any) -> Request:
        now = self.clock.now()
        updated = await self.store.transition(
            request_id, OPEN_STATES, state,
            event=self._event(request_id, kind, actor, reason=reason, **note),
            error=reason or None, enqueue=state.value if deliver else None, now=now,
        )
        if updated is None:
            current = await self.store.get_request(request_id)
            if current is None:
                raise NotFound(request_id)
            raise closed_error(current)
        self.lifecycle.closed(updated, kind, actor, reason)
        self.after_close(updated)
        return updated

    async def redeliver(self, request_id: str, *, actor: str) -> Request:
        """Queue the write-back again (after a failed delivery or resume)."""
        request = await self.store.get_request(request_id)
        if request is None:
            raise NotFound(request_id)
        if request.is_open:
            raise AnswerRejected("the request is still open: there is nothing to deliver yet")
        dead = [item for item in await self.store.list_outbox(request_id=request_id) if item.dead]
        if request.answer is not None:
            timed_out = given_on_timeout(request.answer)
            target_state = RequestState.expired if timed_out else RequestState.answered
        elif dead:  # an expiry or cancellation whose callback gave up
            target_state = RequestState(dead[-1].state)
        elif request.state in (RequestState.expired, RequestState.cancelled):
            target_state = request.state
        else:
            raise AnswerRejected("the request failed without an answer: nothing to deliver")
        outcome = target_state.value
        now = self.clock.now()
        updated = await self.store.transition(
            request_id, {request.state}, target_state,
            event=self._event(request_id, "redeliver", actor), enqueue=outcome, now=now,
        )
        if updated is None:
            raise AnswerRejected("the request changed meanwhile; try again")
        for item in dead:  # superseded by the new entry: no longer a dead letter
            await self.store.outbox_done(item.id)
        self.lifecycle.redelivery(updated, actor)
        for hook in self.on_answered:
            hook(updated)
        self.changes.publish(updated)
        return updated

    async def wait(self, request_id: str, timeout_s: float) -> Request | None:
        """RequestSink.wait: `wait_closed`, for sources."""
        return await self.wait_closed(request_id, timeout_s)

    async def wait_closed(self, request_id: str, wait_s: float) -> Request | None:
        """Return the request once it is no longer open, or as it is after `wait_s` seconds.

        Event-driven: the waiter is registered before the request is read (a change between
        the read and the wait still wakes it) and then costs nothing until the request
        changes here (`ChangeFeed.publish`) or elsewhere (the store's follower pokes it)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        fut = self.changes.waiter(request_id)
        try:
            request = await self.store.get_request(request_id)
            while request is not None and request.is_open and not self.changes.released:
                del request  # a parked waiter keeps no copy of the request (thousands may wait)
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return await self.store.get_request(request_id)
                try:
                    async with asyncio.timeout(remaining):  # one timer handle, no extra task or future
                        changed = await fut
                except TimeoutError:
                    return await self.store.get_request(request_id)
                fut = self.changes.waiter(request_id)  # before reading again: nothing slips between
                request = changed if changed is not None else await self.store.get_request(request_id)
            return request
        finally:
            self.changes.discard(request_id, fut)

