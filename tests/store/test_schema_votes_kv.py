"""Store contract: migrations, votes, the adapters' key/value space, hostile text.

Every test runs against SQLite and PostgreSQL (see conftest.py)."""

from __future__ import annotations

import pytest

from bridge.models import Post, RequestState, TimerStep
from bridge.store import Store, StoreError, Vote
from bridge.store.codec import SCHEMA_VERSION
from tests.store.conftest import Backend
from tests.store.helpers import at, make_answer, make_request


async def test_migrates_an_empty_database_and_reopens(backend: Backend) -> None:
    first = await backend.open_store()  # SQLite: the file and its folders do not exist yet
    try:
        assert await first.count_by_state() == {}
        await first.create_request(make_request(external_id="kept"))
    finally:
        await first.close()
    assert await backend.sql("SELECT value FROM meta WHERE key='schema_version'") == [(str(SCHEMA_VERSION),)]
    second = await backend.open_store()  # migrating again is harmless and keeps the data
    try:
        assert await second.find_by_external_id("webhook", "kept") is not None
        assert await second.count_by_state() == {"pending": 1}
    finally:
        await second.close()


async def test_a_database_from_the_first_release_gets_the_new_columns(backend: Backend) -> None:
    store = await backend.open_store()
    await store.create_request(make_request(external_id="old", state=RequestState.posted))
    failing = make_request(source="delta", state=RequestState.posted)
    await store.create_request(failing)
    await store.transition(failing.id, {RequestState.posted}, RequestState.answered, answer=make_answer(),
                           enqueue="answered", now=at(5))
    [entry] = await store.list_outbox()
    await store.outbox_retry(entry.id, attempts=1, due_at=at(60), error="503")
    await store.close()
    # as the first release left it: no requests.step_due_at, no outbox.source, the old partial index
    await as_before_compact_timers(backend)
    await backend.sql("DROP INDEX ix_outbox_failing")
    await backend.sql("ALTER TABLE outbox DROP COLUMN source")
    await backend.sql("ALTER TABLE requests DROP COLUMN step_due_at")
    await backend.sql("DELETE FROM meta WHERE key='schema_digest'")  # written by later releases only
    if backend.kind == "postgres":
        await backend.sql("CREATE INDEX ix_requests_timed ON requests(state) WHERE deadline IS NOT NULL "
                          "OR next_reminder_at IS NOT NULL OR next_escalation_at IS NOT NULL")
    store = await backend.open_store()
    try:
        assert (await store.outbox_stats()).failing == {"delta": 1}  # filled in from the requests
        old = await store.find_by_external_id("webhook", "old")
        assert old is not None and old.timer_steps == []
        owed = TimerStep(id="remind:1", kind="remind", targets=["web"], lease_until=at(60))
        assert await store.update_request(old.id, now=at(1), timer_steps=[owed]) is not None
        assert await store.timers_due(at(60)) == [(old.id, at(60))]
    finally:
        await store.close()
    if backend.kind == "postgres":
        names = {r[0] for r in await backend.sql("SELECT indexname FROM pg_indexes WHERE tablename='requests' "
                                                   "AND schemaname=current_schema()")}
        assert "ix_requests_next" in names and "ix_requests_timed" not in names


async def as_before_compact_timers(backend: Backend) -> None:
    """Take a store back to before requests.next_at/resume and the kept counts."""
    for trigger in ("insert", "update", "delete"):
        on = " ON requests" if backend.kind == "postgres" else ""
        await backend.sql(f"DROP TRIGGER tr_requests_count_{trigger}{on}")
    await backend.sql("DROP TABLE request_counts")
    await backend.sql("DROP INDEX ix_requests_next")
    await backend.sql("ALTER TABLE requests DROP COLUMN next_at")
    await backend.sql("ALTER TABLE requests DROP COLUMN resume")


async def test_refuses_a_schema_from_a_newer_bridge(backend: Backend) -> None:
    store = await backend.open_store()
    await store.close()
    await backend.sql("UPDATE meta SET value='999' WHERE key='schema_version'")
    with pytest.raises(StoreError, match="upgrade hitl-bridge"):
        await backend.open_store()


async def test_a_store_that_is_not_open_says_so(backend: Backend) -> None:
    store = backend.new_store()
    with pytest.raises(StoreError, match="not open"):
        await store.get_request("r_1")


async def test_votes_count_each_voter_once(store: Store) -> None:
    assert await store.add_vote(Vote("r_1", "slack:U1", "yes", "Ann", at(1))) is True
    assert await store.add_vote(Vote("r_1", "slack:U1", "no", "Ann again", at(2))) is False
    assert await store.add_vote(Vote("r_1", "telegram:42", "yes", "Bob", at(3))) is True
    assert await store.add_vote(Vote("r_2", "slack:U1", "no", "Ann", at(0))) is True
    votes = await store.list_votes("r_1")
    assert votes == [Vote("r_1", "slack:U1", "yes", "Ann", at(1)), Vote("r_1", "telegram:42", "yes", "Bob", at(3))]
    assert [v.value for v in await store.list_votes("r_2")] == ["no"]
    assert await store.list_votes("r_3") == []


async def test_kv_put_get_expire_delete(store: Store) -> None:
    await store.kv_put("telegram", "cb:abc", {"request_id": "r_1", "option": "yes"}, expires_at=at(100))
    await store.kv_put("slack", "cb:abc", {"other": "namespace"})
    assert await store.kv_get("telegram", "cb:abc") == {"request_id": "r_1", "option": "yes"}
    assert await store.kv_get("telegram", "cb:abc", now=at(99)) == {"request_id": "r_1", "option": "yes"}
    assert await store.kv_get("telegram", "cb:abc", now=at(100)) is not None  # valid up to its instant
    assert await store.kv_get("telegram", "cb:abc", now=at(101)) is None
    assert await store.kv_get("slack", "cb:abc", now=at(10**6)) == {"other": "namespace"}  # no expiry
    await store.kv_put("telegram", "cb:abc", {"replaced": True}, expires_at=None)
    assert await store.kv_get("telegram", "cb:abc", now=at(10**6)) == {"replaced": True}
    assert await store.kv_delete("telegram", "cb:abc") is True
    assert await store.kv_get("telegram", "cb:abc") is None
    assert await store.kv_get("slack", "cb:abc") == {"other": "namespace"}
    assert await store.kv_delete("telegram", "never-there") is False  # deleting nothing is fine


async def test_kv_items_lists_a_namespace_and_delete_is_a_claim(store: Store) -> None:
    await store.kv_put("tg.reason", "b", {"n": 2}, expires_at=at(100))
    await store.kv_put("tg.reason", "a", {"n": 1})
    await store.kv_put("tg.reason", "gone", {"n": 3}, expires_at=at(50))
    await store.kv_put("tg.other", "x", {"n": 4})
    assert await store.kv_items("tg.reason", now=at(60)) == [("a", {"n": 1}), ("b", {"n": 2})]
    assert [k for k, _ in await store.kv_items("tg.reason")] == ["a", "b", "gone"]
    assert await store.kv_items("nothing-here") == []
    assert await store.kv_delete("tg.reason", "a") is True  # the first to delete holds the claim
    assert await store.kv_delete("tg.reason", "a") is False
    assert [k for k, _ in await store.kv_items("tg.reason", now=at(0))] == ["b", "gone"]


# Hostile text: "\u0000" is valid JSON, so an engine or a platform can send it; PostgreSQL's
# text type cannot hold it. Nothing may fail, and lookups must stay exact.
NASTY = ["job\x00one", "\x00", "\x01looks-escaped", "\x01", "emoji 🚀 and ünïcode", "back\\slash\\u0000"]


async def test_hostile_text_round_trips_and_stays_exact(store: Store) -> None:
    for n, text in enumerate(NASTY):
        request = make_request(external_id=text, source=f"src{text}", route=text, created=n,
                               title=f"t{text}", context={"k": text})
        assert (await store.create_request(request))[1] is True
        found = await store.find_by_external_id(f"src{text}", text)
        assert found == request
        assert [r.id for r in await store.list_requests(source=f"src{text}", route=text)] == [request.id]
    assert await store.find_by_external_id("srcjob", "job") is None
    assert await store.find_by_external_id("src\\u0000", "\\u0000") is None
    assert await store.get_request("r_\x00missing") is None
    assert await store.list_events("r_\x00") == [] and await store.list_posts("\x00") == []
    for n, text in enumerate(NASTY):
        await store.kv_put(text, text, {"v": text})
        await store.add_vote(Vote("r_x", f"slack:{text}", text, text, at(n)))
        await store.add_event("r_x", text, text, {"text": text}, at(n))
        await store.add_post(Post(request_id="r_x", channel=text, target=text, ref={"t": text}, ok=False,
                                  error=text, at=at(n)))
        item = await store.enqueue("r_x", text, at(n))
        await store.outbox_retry(item, attempts=1, due_at=at(n), error=text)
    for text in NASTY:
        assert await store.kv_get(text, text) == {"v": text}
    assert [(v.voter, v.value, v.name) for v in await store.list_votes("r_x")] == [
        (f"slack:{t}", t, t) for t in NASTY]
    assert [(e.kind, e.actor, e.data) for e in await store.list_events("r_x")] == [
        (t, t, {"text": t}) for t in NASTY]
    assert [(p.channel, p.target, p.ref, p.error) for p in await store.list_posts("r_x")] == [
        (t, t, {"t": t}, t) for t in NASTY]
    assert [(i.state, i.last_error) for i in await store.list_outbox(request_id="r_x")] == [(t, t) for t in NASTY]


async def test_large_request_body_round_trips(store: Store) -> None:
    request = make_request(context={"diff": "x" * 2_000_000, "lines": list(range(10_000))})
    await store.create_request(request)
    assert await store.get_request(request.id) == request


async def test_out_of_range_paging_returns_nothing(store: Store) -> None:
    await store.create_request(make_request())
    assert await store.list_requests(offset=10**30) == []
    assert len(await store.list_requests(limit=10**30)) == 1
