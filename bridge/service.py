"""The bridge core: the request state machine, between sources, store, channels and outbox."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Sequence
from typing import Any

from bridge.config import Route
from bridge.crypto import SecretBox
from bridge.errors import (
    AlreadyClosed,
    AnswerRejected,
    NotAllowed,
    NotFound,
    NotTheSameRequest,
    SelfApproval,
    SharedVoter,
)
from bridge.fingerprint import fingerprint
from bridge.health import Health
from bridge.lifecycle import Lifecycle
from bridge.models import (
    OPEN_STATES,
    Answer,
    Event,
    InvalidAnswer,
    Post,
    Question,
    QuestionKind,
    Request,
    RequestIn,
    RequestState,
    Responder,
    has_lone_surrogate,
    new_request_id,
)
from bridge.narrowing import check_narrows
from bridge.notify import ChangeFeed
from bridge.outcome import closed_error
from bridge.people import People, canonical_target, shared_voters
from bridge.ports import Channel, Clock, PostResult, Source
from bridge.router import Router
from bridge.rules import Judged, asked_by, judge, route_in_force, snapshot
from bridge.store.base import Store, StoreError, Vote
from bridge.store.query import RequestQuery
from bridge.timers import initial_timers
from bridge.waiting import waiting_for

log = logging.getLogger("hitl_bridge")

TRUSTED_VIAS = frozenset({"api", "cli", "web", "timeout"})


class BridgeService:
    """Implements RequestSink and BridgeAPI (bridge.ports)."""

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
        self._tasks: set[asyncio.Task[Any]] = set()
        self.on_answered: list[Any] = []  # callables(request) -> None: outbox kick etc.
        self.on_created: list[Any] = []  # callables(request) -> None: the scheduler arms timers

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
        to it is recorded as a failed copy that says why."""
        out: list[str] = []
        for target in targets:
            reached = self.people.targets_of(target)
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
        stored.targets = list(route.notify)
        if not stored.responders:
            stored.responders = list(route.responders)
        stored.responders = list(dict.fromkeys(self.people.canonical_entry(e) for e in stored.responders))
        stored.rules = snapshot(stored, route, self.people)  # it is judged by these while open
        initial_timers(stored, route, now)
        event = self._event(
            stored.id, "created", source, route=stored.route, targets=stored.targets,
            external_id=stored.external_id,
        )
        saved, created = await self.store.create_request(stored, event)
        if created:
            self.lifecycle.created(saved)
            self.changes.publish(saved)
            for hook in self.on_created:
                hook(saved)
            self.background(self.post(saved, saved.targets), f"post {saved.id}")
        else:
            self._same_request(saved, stored)
        return saved, created

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

    async def withdraw(self, source: str, external_id: str, reason: str) -> Request | None:
        request = await self.store.find_by_external_id(source, external_id)
        if request is None or not request.is_open:
            return request
        return await self._close(request.id, RequestState.cancelled, "withdrawn", source, reason=reason,
                                 deliver=False)

    # posting ----------------------------------------------------------------------------
    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        """Show `request` on `targets` (grouped by channel); record every copy.

        A request closed before its posting starts is shown nowhere; one closed while its
        copies go out gets them recorded (no `posted` event after its close: the store
        decides that atomically) and brought up to date at once (they say it is closed)."""
        current = await self.store.get_request(request.id)
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
        self.lifecycle.posted(request, [(p.channel, r) for p, r in zip(posts, results, strict=True)])
        updated = await self.store.record_posts(request.id, posts, events, now=now)
        if updated is not None:
            self.changes.publish(updated)
        elif ok:  # already posted earlier (escalation), or closed meanwhile: bring the new copy up to date
            current = await self.store.get_request(request.id)
            if current is not None and not current.is_open:
                log.info("request %s closed (%s) while it was being posted: updating its copies",
                         request.id, current.state.value)
                self.background(self.update_channels(current), f"update {request.id}")
        return results

    async def update_channels(self, request: Request) -> None:
        """Bring every copy of `request` up to date on every channel that showed it."""
        posts = await self.store.list_posts(request.id)
        names = {p.channel for p in posts if p.ok}
        for channel in self.channels:
            if channel.name in names:
                try:
                    await channel.update(request)
                except Exception:
                    log.exception("channel %s failed to update %s", channel.name, request.id)

    async def repost_pending(self) -> int:
        """At start: post requests stored but never shown (a crash between store and post)."""
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
        if via in TRUSTED_VIAS or not request.responders:
            return True
        rules = self.judged(request)
        if any(rules.admits(entry, responder) for entry in request.responders):
            return True  # the handle, person:, group:, or another handle of the same person
        for entry in request.responders:
            channel = self.channel_for(entry)
            is_member = getattr(channel, "is_member", None)
            if is_member is not None and entry.startswith(responder.platform + ":"):
                try:
                    if await is_member(entry, responder):
                        return True
                except Exception:
                    log.exception("resolving responders entry %s failed", entry)
        return False

    async def waiting_for(self, responder: Responder, *, channel: str, here: Sequence[str] = (),
                          named: bool = True) -> list[Request]:
        return await waiting_for(self.store, self.is_allowed, responder, channel=channel, here=here, named=named)

    def validate(self, request: Request, values: dict[str, Any]) -> dict[str, Any]:
        """Normalise values against the questions; raise AnswerRejected naming the question."""
        if not isinstance(values, dict):
            raise AnswerRejected("answer values must be an object keyed by question id")
        if has_lone_surrogate(values):
            raise AnswerRejected("the answer holds text that is not valid Unicode (a lone surrogate)")
        unknown = set(values) - {q.id for q in request.questions}
        if unknown:
            raise AnswerRejected(f"unknown question ids {sorted(unknown)}; "
                                 f"expected {[q.id for q in request.questions]}")
        out: dict[str, Any] = {}
        for question in request.questions:
            value = values.get(question.id)
            if value is None and not question.required:
                continue
            try:
                out[question.id] = question.validate_answer(value)
            except InvalidAnswer as exc:
                raise AnswerRejected(str(exc)) from None
        return out

    async def answer(
        self,
        request_id: str,
        responder: Responder,
        values: dict[str, Any],
        *,
        via: str,
        reason: str | None = None,
    ) -> Request:
        request = await self.store.get_request(request_id)
        if request is None:
            raise NotFound(request_id)
        if not request.is_open:
            raise self._closed(request)
        if not await self.is_allowed(request, responder, via=via):
            await self.note(request_id, "refused", responder.key,
                            {"name": responder.name, "via": via, "reason": "not in responders"})
            raise NotAllowed(responder.display)
        clean = self.validate(request, values)
        rules = self.judged(request)
        route = rules.route
        if route.forbid_self_approval and via != "timeout" and self._asked_by(request, responder) \
                and not self._is_rejection(request, clean):
            await self.note(request_id, "refused", responder.key,
                            {"name": responder.name, "via": via, "reason": "self-approval",
                             "requested_by": request.requested_by})
            raise SelfApproval(self.people.display(responder))
        responder = self._identified(responder)
        quorum = route.quorum
        if quorum > 1 and via != "timeout" and self.people.voter(responder) in shared_voters():
            await self.note(request_id, "refused", responder.key,
                            {"name": responder.name, "via": via, "reason": "shared password"})
            raise SharedVoter(quorum, self.people.voter(responder))
        if quorum > 1 and via != "timeout":
            decided = await self._vote(request, responder, clean, quorum, via, rules)
            if decided is None:
                current = await self.store.get_request(request_id)
                assert current is not None
                self.changes.publish(current)
                self.background(self.update_channels(current), f"update {request_id}")
                return current
        return await self._record(request, responder, clean, via=via, reason=reason)

    def _asked_by(self, request: Request, responder: Responder) -> bool:
        """True when `responder` is the person the request names in `requested_by`, or the
        token that submitted it (as the request's rules knew them or as the config knows them
        now); or when the token relaying the answer for them is either."""
        askers = asked_by(request)
        if self.judged(request).is_asker(responder, askers):
            return True
        if responder.relayed_by:
            relay = self.people.voter_of(responder.relayed_by)
            return any(relay == self.people.voter_of(asker) for asker in askers)
        return False

    @staticmethod
    def _is_rejection(request: Request, clean: dict[str, Any]) -> bool:
        return any(q.kind is QuestionKind.confirm and clean.get(q.id) == "no" for q in request.questions)

    def _identified(self, responder: Responder) -> Responder:
        """`responder` with the person its handle belongs to (from `people:`), if any."""
        person = self.people.person_of(responder.key) if responder.platform != "person" else responder.user_id
        if person is None or responder.person == person:
            return responder
        return responder.model_copy(update={"person": person})

    async def _vote(self, request: Request, responder: Responder, clean: dict[str, Any],
                    quorum: int, via: str, rules: Judged) -> bool | None:
        """Record one vote per person (`people:` joins one person's handles). True: final
        (quorum met or a rejection); None: still open."""
        import json

        rejection = self._is_rejection(request, clean)
        value = json.dumps(self._redact(request, clean), sort_keys=True)
        now = self.clock.now()
        voter = rules.voter(responder)
        first = await self.store.add_vote(Vote(request.id, voter, value, self.people.display(responder), now))
        self.lifecycle.voted(request, responder, via, first)
        await self.note(request.id, "vote" if first else "duplicate_vote", responder.key,
                        {"name": responder.name, "via": via, "voter": voter,
                         "value": self._redact(request, clean),
                         **({"relayed_by": responder.relayed_by} if responder.relayed_by else {})})
        if rejection and first:
            return True
        votes = await self.store.list_votes(request.id)
        same = [v for v in votes if v.value == value]
        return True if len(same) >= quorum and not rejection else None

    def _redact(self, request: Request, values: dict[str, Any]) -> dict[str, Any]:
        secret = request.secret_question_ids
        return {k: ("[secret]" if k in secret else v) for k, v in values.items()}

    async def _record(self, request: Request, responder: Responder, clean: dict[str, Any], *,
                      via: str, reason: str | None,
                      to_state: RequestState = RequestState.answered) -> Request:
        now = self.clock.now()
        sealed = {k: (self.secrets.seal(v) if k in request.secret_question_ids else v)
                  for k, v in clean.items()}
        answer = Answer(values=sealed, responder=responder, via=via, answered_at=now, reason=reason)
        event = self._event(request.id, "answered" if to_state is RequestState.answered else "expired",
                            responder.key, name=responder.name, via=via,
                            values=self._redact(request, clean), reason=reason,
                            **({"relayed_by": responder.relayed_by} if responder.relayed_by else {}))
        updated = await self.store.transition(
            request.id, OPEN_STATES, to_state, event=event, answer=answer,
            enqueue=to_state.value, now=now,
        )
        if updated is None:
            current = await self.store.get_request(request.id)
            raise self._closed(current or request)
        self.lifecycle.answered(updated)
        self._after_close(updated)
        return updated

    def _closed(self, request: Request) -> AlreadyClosed:
        return closed_error(request)

    def _after_close(self, request: Request) -> None:
        for hook in self.on_answered:
            hook(request)
        self.changes.publish(request)
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
        request = await self.store.get_request(request_id)
        if request is None:
            raise NotFound(request_id)
        if not request.is_open:
            raise self._closed(request)
        # the value answers every question it fits; an optional question it does not fit (the
        # edit of a tool call's arguments next to its Approve/Reject) stays unanswered
        values = {q.id: value for q in request.questions if q.required or _fits(q, value)}
        clean = self.validate(request, values)
        return await self._record(request, Responder(platform="timeout", user_id="timeout", name="timeout"),
                                  clean, via="timeout", reason="deadline passed",
                                  to_state=RequestState.expired)

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
            raise self._closed(current)
        self.lifecycle.closed(updated, kind, actor, reason)
        self._after_close(updated)
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
            timed_out = request.answer.via == "timeout"
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


def _fits(question: Question, value: Any) -> bool:
    try:
        question.validate_answer(value)
    except InvalidAnswer:
        return False
    return True
