"""Store contract, requests: create/get, idempotency, listing, compare-and-set, events, posts, timers.

Every test runs against SQLite and PostgreSQL (see conftest.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from bridge.models import Post, Request, RequestState, TimerStep
from bridge.store import Store
from tests.store.conftest import Backend
from tests.store.helpers import at, make_answer, make_event, make_request

OPEN = frozenset({RequestState.pending, RequestState.posted})


async def test_create_then_get_round_trips_every_field(store: Store) -> None:
    request = make_request(
        external_id="job-1", deadline=at(3600), next_reminder_at=at(600), context={"diff": "+1 -1", "n": [1, 2]},
        labels={"team": "api"}, source_ref={"path": "/srv/ws/request.json"}, targets=["slack:#deploys"],
    )
    saved, created = await store.create_request(request, make_event(request.id, "created"))
    assert created and saved == request
    assert await store.get_request(request.id) == request
    assert await store.find_by_external_id("webhook", "job-1") == request
    assert await store.get_request("r_missing") is None
    assert await store.find_by_external_id("webhook", "job-2") is None
    assert [e.kind for e in await store.list_events(request.id)] == ["created"]


async def test_same_external_id_returns_the_stored_request(store: Store) -> None:
    first = make_request(external_id="job-7")
    assert (await store.create_request(first, make_event(first.id, "created")))[1] is True
    again = make_request(external_id="job-7", title="a retry from the engine")
    saved, created = await store.create_request(again, make_event(again.id, "created"))
    assert created is False
    assert saved.id == first.id and saved.title == first.title
    assert await store.get_request(again.id) is None
    assert await store.list_events(again.id) == []
    # the key is (source, external_id): another source may reuse it, and None never collides
    other = make_request(external_id="job-7", source="delta")
    assert (await store.create_request(other))[1] is True
    assert (await store.create_request(make_request()))[1] is True
    assert (await store.create_request(make_request()))[1] is True
    assert sum((await store.count_by_state()).values()) == 4


async def test_concurrent_creates_with_one_external_id_store_one(backend: Backend, store: Store) -> None:
    replica = await backend.open_store()
    try:
        attempts = [make_request(external_id="burst") for _ in range(12)]
        results = await asyncio.gather(*(
            (store if i % 2 else replica).create_request(r, make_event(r.id, "created"))
            for i, r in enumerate(attempts)
        ))
    finally:
        await replica.close()
    assert sum(created for _, created in results) == 1
    assert len({saved.id for saved, _ in results}) == 1
    assert await store.count_by_state() == {"pending": 1}


async def test_list_filters_and_newest_first(store: Store) -> None:
    a = make_request(created=1, source="webhook", route="deploys")
    b = make_request(created=2, source="delta", route="deploys", state=RequestState.posted)
    c = make_request(created=3, source="delta", route="default", state=RequestState.answered)
    d = make_request(created=4, source="webhook", route="default", state=RequestState.posted)
    for r in (c, a, d, b):  # insertion order must not matter
        await store.create_request(r)

    def ids(rows: list) -> list[str]:
        return [r.id for r in rows]

    assert ids(await store.list_requests()) == [d.id, c.id, b.id, a.id]
    assert ids(await store.list_requests(states=[RequestState.posted])) == [d.id, b.id]
    assert ids(await store.list_requests(states=[RequestState.posted, RequestState.pending])) == [d.id, b.id, a.id]
    assert ids(await store.list_requests(source="delta")) == [c.id, b.id]
    assert ids(await store.list_requests(route="deploys")) == [b.id, a.id]
    assert ids(await store.list_requests(source="webhook", route="default")) == [d.id]
    assert ids(await store.list_requests(limit=2)) == [d.id, c.id]
    assert ids(await store.list_requests(limit=2, offset=2)) == [b.id, a.id]
    assert await store.list_requests(offset=10) == []
    assert await store.list_requests(states=[RequestState.failed]) == []
    assert await store.count_by_state() == {"pending": 1, "posted": 2, "answered": 1}


async def test_same_created_at_orders_by_id(store: Store) -> None:
    rows = [make_request(created=5, request_id=f"r_{n}") for n in ("b", "a", "c")]
    for r in rows:
        await store.create_request(r)
    assert [r.id for r in await store.list_requests()] == ["r_c", "r_b", "r_a"]


async def test_transition_is_compare_and_set(store: Store) -> None:
    request = make_request(next_reminder_at=at(600), next_escalation_at=at(900), deadline=at(3600))
    await store.create_request(request)
    posted = await store.transition(request.id, {RequestState.pending}, RequestState.posted, now=at(1))
    assert posted is not None and posted.state is RequestState.posted and posted.updated_at == at(1)
    assert posted.next_reminder_at == at(600)  # timers stay while the request is open
    # wrong current state: nothing changes, nothing is appended
    assert await store.transition(request.id, {RequestState.pending}, RequestState.cancelled, now=at(2)) is None
    assert await store.transition("r_nope", OPEN, RequestState.cancelled, now=at(2)) is None
    answer = make_answer("U9")
    answered = await store.transition(
        request.id, OPEN, RequestState.answered, answer=answer, enqueue="answered", now=at(60),
        event=make_event(request.id, "answered", 60, actor="slack:U9"),
    )
    assert answered is not None and answered.answer == answer
    assert answered.next_reminder_at is None and answered.next_escalation_at is None
    assert answered.deadline == at(3600)
    stored = await store.get_request(request.id)
    assert stored == answered
    [item] = await store.list_outbox(request_id=request.id)
    assert (item.state, item.attempts, item.due_at, item.dead) == ("answered", 0, at(60), False)
    assert [e.kind for e in await store.list_events(request.id)] == ["answered"]
    failed = await store.transition(
        request.id, {RequestState.answered}, RequestState.failed, error="engine gone", now=at(70),
    )
    assert failed is not None and failed.error == "engine gone" and failed.answer == answer
    assert await store.list_timed() == []


async def test_twenty_concurrent_answers_exactly_one_wins(backend: Backend, store: Store) -> None:
    request = make_request(state=RequestState.posted)
    await store.create_request(request)
    replica = await backend.open_store()  # half the answers arrive through another replica
    try:
        results = await asyncio.gather(*(
            (replica if n % 2 else store).transition(
                request.id, OPEN, RequestState.answered, answer=make_answer(f"U{n}"), enqueue="answered",
                event=make_event(request.id, "answered", actor=f"slack:U{n}"), now=at(60 + n),
            )
            for n in range(20)
        ))
    finally:
        await replica.close()
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    winner = winners[0]
    assert winner.answer is not None
    stored = await store.get_request(request.id)
    assert stored is not None and stored.answer == winner.answer
    assert len(await store.list_outbox(request_id=request.id)) == 1
    events = await store.list_events(request.id)
    assert [(e.kind, e.actor) for e in events] == [("answered", f"slack:{winner.answer.responder.user_id}")]


async def test_update_request_sets_fields(store: Store) -> None:
    request = make_request()
    await store.create_request(request)
    updated = await store.update_request(
        request.id, now=at(5), targets=["slack:#ops", "telegram:42"], escalation_level=2, reminders_sent=1,
        next_reminder_at=at(900), answer=make_answer(),
    )
    assert updated is not None and updated.updated_at == at(5)
    stored = await store.get_request(request.id)
    assert stored == updated
    assert stored.targets == ["slack:#ops", "telegram:42"] and stored.escalation_level == 2
    assert [r.id for r in await store.list_timed()] == [request.id]  # the indexed column moved too
    assert await store.update_request("r_nope", now=at(5), escalation_level=1) is None


async def test_events_keep_their_order_and_data(store: Store) -> None:
    request = make_request()
    await store.create_request(request, make_event(request.id, "created", 0, route="default"))
    await store.add_event(request.id, "posted", "slack", {"targets": ["slack:#a"], "n": 1}, at(1))
    await store.add_event(request.id, "refused", "slack:U5", {"why": "not a responder"}, at(1))
    await store.add_event(request.id, "reminded", "scheduler", {}, at(0.5))  # order is append order
    await store.add_event("r_other", "posted", "x", {}, at(1))
    events = await store.list_events(request.id)
    assert [e.kind for e in events] == ["created", "posted", "refused", "reminded"]
    assert events[1].data == {"targets": ["slack:#a"], "n": 1} and events[1].at == at(1)
    assert events[2].actor == "slack:U5"
    assert len({e.id for e in events}) == 4 and [e.id for e in events] == sorted(e.id for e in events)


async def test_posts_by_request_and_channel(store: Store) -> None:
    request = make_request()
    await store.create_request(request)
    await store.add_post(Post(request_id=request.id, channel="slack", target="slack:#deploys",
                              ref={"channel": "C1", "ts": "1.2"}, at=at(1)))
    await store.add_post(Post(request_id=request.id, channel="telegram", target="telegram:42",
                              ref={"chat_id": 42, "message_id": 7}, at=at(2)))
    await store.add_post(Post(request_id=request.id, channel="slack", target="slack:@U1", ok=False,
                              error="channel_not_found", at=at(3)))
    posts = await store.list_posts(request.id)
    assert [(p.channel, p.target) for p in posts] == [
        ("slack", "slack:#deploys"), ("telegram", "telegram:42"), ("slack", "slack:@U1")]
    slack = await store.list_posts(request.id, channel="slack")
    assert [p.ref for p in slack] == [{"channel": "C1", "ts": "1.2"}, {}]
    assert slack[1].ok is False and slack[1].error == "channel_not_found" and slack[1].at == at(3)
    assert (await store.list_posts(request.id, channel="telegram"))[0].ref == {"chat_id": 42, "message_id": 7}
    assert await store.list_posts("r_other") == []


async def test_list_timed_returns_open_requests_with_a_timer(store: Store) -> None:
    deadline = make_request(deadline=at(3600))
    reminder = make_request(next_reminder_at=at(600), state=RequestState.posted)
    escalation = make_request(next_escalation_at=at(900), state=RequestState.posted)
    untimed = make_request()
    closed = make_request(deadline=at(3600), state=RequestState.answered)
    for r in (deadline, reminder, escalation, untimed, closed):
        await store.create_request(r)
    assert {r.id for r in await store.list_timed()} == {deadline.id, reminder.id, escalation.id}
    await store.transition(deadline.id, OPEN, RequestState.cancelled, now=at(10))
    assert {r.id for r in await store.list_timed()} == {reminder.id, escalation.id}


async def test_timers_due_gives_each_open_requests_earliest_instant_up_to_a_bound(store: Store) -> None:
    both = make_request(deadline=at(3600), next_reminder_at=at(600), state=RequestState.posted)
    later = make_request(next_escalation_at=at(900))
    exact = make_request(deadline=at(700))
    closed = make_request(next_reminder_at=at(60), state=RequestState.answered)
    for r in (both, later, exact, closed, make_request()):
        await store.create_request(r)
    assert sorted(await store.timers_due(at(700))) == sorted([(both.id, at(600)), (exact.id, at(700))])
    assert {rid for rid, _ in await store.timers_due(at(10_000))} == {both.id, later.id, exact.id}
    assert await store.timers_due(at(599)) == []


async def test_a_claim_applies_once_across_replicas(backend: Backend, store: Store) -> None:
    request = make_request(next_reminder_at=at(600), state=RequestState.posted)
    await store.create_request(request)
    replica = await backend.open_store()
    try:
        results = await asyncio.gather(*(
            (replica if n % 2 else store).update_request(
                request.id, now=at(600), expect={"next_reminder_at": at(600), "reminders_sent": 0},
                next_reminder_at=at(1200), reminders_sent=1)
            for n in range(10)
        ))
    finally:
        await replica.close()
    assert sum(r is not None for r in results) == 1
    stored = await store.get_request(request.id)
    assert stored is not None and stored.reminders_sent == 1 and stored.next_reminder_at == at(1200)
    # a closed request is never claimed, even when the fields still match
    await store.transition(request.id, OPEN, RequestState.cancelled, now=at(700))
    assert await store.update_request(request.id, now=at(800), expect={"reminders_sent": 1},
                                      reminders_sent=2) is None


async def test_record_posts_moves_pending_to_posted_once(store: Store) -> None:
    request = make_request()
    await store.create_request(request)
    failed = Post(request_id=request.id, channel="slack", target="slack:#gone", ok=False, error="channel_not_found",
                  at=at(1))
    assert await store.record_posts(request.id, [failed], [make_event(request.id, "post_failed", 1)],
                                    now=at(1)) is None
    stored = await store.get_request(request.id)
    assert stored is not None and stored.state is RequestState.pending
    ok = Post(request_id=request.id, channel="telegram", target="telegram:42", ref={"chat_id": 42, "message_id": 9},
              at=at(2))
    posted = await store.record_posts(request.id, [ok], [make_event(request.id, "posted", 2)], now=at(2))
    assert posted is not None and posted.state is RequestState.posted and posted.updated_at == at(2)
    assert await store.get_request(request.id) == posted
    # a later copy (escalation) is recorded, but the request is no longer pending
    later = Post(request_id=request.id, channel="slack", target="slack:@U9", ref={"ts": "3"}, at=at(3))
    assert await store.record_posts(request.id, [later], [], now=at(3)) is None
    assert [p.target for p in await store.list_posts(request.id)] == ["slack:#gone", "telegram:42", "slack:@U9"]
    assert [e.kind for e in await store.list_events(request.id)] == ["post_failed", "posted"]
    assert await store.record_posts("r_missing", [later], [], now=at(4)) is None


async def test_record_posts_with_the_callers_copy_stores_what_it_returns(store: Store) -> None:
    request = make_request(context={"diff": "+1 -1 ✓", "n": [1, 2.5]}, labels={"team": "api"})
    saved, _ = await store.create_request(request)
    ok = Post(request_id=request.id, channel="web", target="web", ref={"path": "/inbox"}, at=at(2))
    posted = await store.record_posts(request.id, [ok], [make_event(request.id, "posted", 2)], now=at(2), held=saved)
    assert posted is not None and posted.state is RequestState.posted and posted.updated_at == at(2)
    assert await store.get_request(request.id) == posted
    assert saved.state is RequestState.pending  # the caller's copy is left as it was
    assert await store.count_by_state() == {"posted": 1}


async def test_record_posts_reads_the_row_when_the_callers_copy_is_stale(store: Store) -> None:
    request = make_request()
    saved, _ = await store.create_request(request)
    changed = await store.update_request(request.id, now=at(1), escalation_level=1)  # changed after the copy
    assert changed is not None
    ok = Post(request_id=request.id, channel="web", target="web", ref={}, at=at(2))
    posted = await store.record_posts(request.id, [ok], [make_event(request.id, "posted", 2)], now=at(2), held=saved)
    assert posted is not None and posted.escalation_level == 1 and posted.state is RequestState.posted
    assert await store.get_request(request.id) == posted


async def test_record_posts_racing_another_change_loses_neither(backend: Backend, store: Store) -> None:
    """The move to posted and a concurrent change on another replica (a reminder counted)
    both land, whichever commits first."""
    replica = await backend.open_store()
    try:
        for n in range(30):
            request = make_request()
            await store.create_request(request)
            ok = Post(request_id=request.id, channel="web", target="web", ref={"path": "/inbox"}, at=at(1))
            posted, counted = await asyncio.gather(
                store.record_posts(request.id, [ok], [make_event(request.id, "posted", 1)], now=at(1)),
                replica.update_request(request.id, now=at(2), expect={"reminders_sent": 0}, reminders_sent=n + 1))
            assert posted is not None and counted is not None
            stored = await store.get_request(request.id)
            assert stored is not None and stored.state is RequestState.posted and stored.reminders_sent == n + 1
            assert len(await store.list_posts(request.id)) == 1
    finally:
        await replica.close()


def step(step_id: str, lease: float) -> TimerStep:
    return TimerStep(id=step_id, kind="remind", targets=["web"], lease_until=at(lease), owner="test")


async def test_modify_request_is_one_atomic_read_modify_write(backend: Backend, store: Store) -> None:
    request = make_request(state=RequestState.posted)
    await store.create_request(request)
    replica = await backend.open_store()

    def adder(n: int) -> Callable[[Request], bool]:
        def change(current: Request) -> bool:
            current.timer_steps.append(step(f"remind:{n}", 600 + n))
            return True
        return change

    try:  # 20 edits of one list from two "replicas" at once: none is lost
        await asyncio.gather(*((replica if n % 2 else store).modify_request(
            request.id, adder(n), now=at(n), events=[make_event(request.id, "step", n, n=n)]) for n in range(20)))
    finally:
        await replica.close()
    stored = await store.get_request(request.id)
    assert stored is not None
    assert sorted(s.id for s in stored.timer_steps) == sorted(f"remind:{n}" for n in range(20))
    assert stored.step_due_at == at(600)
    assert len([e for e in await store.list_events(request.id) if e.kind == "step"]) == 20
    # a change that says no leaves the request and the events as they were
    assert await store.modify_request(request.id, lambda r: False, now=at(99),
                                      events=[make_event(request.id, "nope")]) is None
    assert "nope" not in [e.kind for e in await store.list_events(request.id)]
    assert await store.modify_request("r_missing", lambda r: True, now=at(99)) is None


async def test_a_claimed_step_is_a_timer_until_it_is_done_or_the_request_closes(store: Store) -> None:
    owed = make_request(state=RequestState.posted, timer_steps=[step("remind:1", 660)])
    await store.create_request(owed)
    assert [r.id for r in await store.list_timed()] == [owed.id]
    assert await store.timers_due(at(700)) == [(owed.id, at(660))]
    assert await store.timers_due(at(659)) == []
    closed = await store.transition(owed.id, OPEN, RequestState.cancelled, now=at(670))
    assert closed is not None and closed.timer_steps == []
    assert await store.list_timed() == []
