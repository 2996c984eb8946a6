"""Store contract, search: `find_requests` / `count_requests` (the inbox's search, its tab
counts and "waiting for me"). Every test runs against SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bridge.models import Callback, Post, RequestState
from bridge.store import Store, Vote
from bridge.store.query import RequestQuery
from tests.store.helpers import at, make_request

OPEN = (RequestState.pending, RequestState.posted)


async def _ids(store: Store, query: RequestQuery, **kwargs: int) -> list[str]:
    return [r.id for r in await store.find_requests(query, **kwargs)]


async def test_text_is_found_in_title_description_and_context_only(store: Store) -> None:
    title = make_request(created=1, title="Deploy PAYMENTS-api v2")
    desc = make_request(created=2, title="Other", description="Rolls out **6 replicas** of payments")
    ctx = make_request(created=3, title="Third", context={"ticket": "SUP-4821", "nested": {"branch": "release/2.14"}})
    key = make_request(created=4, title="Fourth", context={"payments_owner": "ana"})
    secret = make_request(created=5, title="Hidden", callback=Callback(url="https://hooks.example.com/x",
                                                                       secret="payments-signing-secret-1234"),
                          source_ref={"path": "/srv/payments/request.json"}, labels={"team": "payments"})
    for request in (title, desc, ctx, key, secret):
        await store.create_request(request)
    everything = RequestQuery(text="payments")
    # newest first; never the callback secret, source_ref or labels (not searched)
    assert await _ids(store, everything) == [key.id, desc.id, title.id]
    assert await _ids(store, RequestQuery(text="PayMents")) == [key.id, desc.id, title.id]  # ASCII case folded
    assert await _ids(store, RequestQuery(text="release/2.14")) == [ctx.id]
    assert await _ids(store, RequestQuery(text="signing-secret")) == []
    assert await _ids(store, everything, limit=1, offset=1) == [desc.id]
    assert await store.count_requests(everything) == {"pending": 3}


async def test_wildcards_quotes_and_unicode_are_plain_text(store: Store) -> None:
    percent = make_request(created=1, title="Raise the limit to 100% now")
    under = make_request(created=2, title="rename a_b", context={"say": 'he said "hi" \\ bye'})
    unicode = make_request(created=3, title="Überweisung prüfen", context={"ort": "Zürich", "nul": "a\u0000b",
                                                                      "path": "C:\\u0000dir"})
    for request in (percent, under, unicode):
        await store.create_request(request)
    assert await _ids(store, RequestQuery(text="100%")) == [percent.id]
    assert await _ids(store, RequestQuery(text="%")) == [percent.id]
    assert await _ids(store, RequestQuery(text="a_b")) == [under.id]
    assert await _ids(store, RequestQuery(text="_")) == [under.id]
    assert await _ids(store, RequestQuery(text='"hi" \\ bye')) == [under.id]
    assert await _ids(store, RequestQuery(text="prüfen")) == [unicode.id]
    assert await _ids(store, RequestQuery(text="Zürich")) == [unicode.id]
    assert await _ids(store, RequestQuery(text="C:\\u0000dir")) == [unicode.id]  # a backslash, not a NUL
    assert await _ids(store, RequestQuery(text="'; DROP TABLE requests; --")) == []
    assert len(await store.find_requests(RequestQuery())) == 3


async def test_states_source_and_route_narrow_and_counts_by_state(store: Store) -> None:
    a = make_request(created=1, title="deploy a", route="deploys", state=RequestState.posted)
    b = make_request(created=2, title="deploy b", source="delta", state=RequestState.answered)
    c = make_request(created=3, title="deploy c", route="deploys", state=RequestState.cancelled)
    other = make_request(created=4, title="unrelated")
    for request in (a, b, c, other):
        await store.create_request(request)
    query = RequestQuery(text="deploy", states=OPEN)
    assert await _ids(store, query) == [a.id]
    assert await store.count_requests(query) == {"posted": 1}
    assert await store.count_requests(RequestQuery(text="deploy")) == {"posted": 1, "answered": 1, "cancelled": 1}
    assert await _ids(store, RequestQuery(text="deploy", route="deploys")) == [c.id, a.id]
    assert await _ids(store, RequestQuery(source="delta")) == [b.id]
    assert await store.count_requests(RequestQuery(route="nowhere")) == {}


async def test_waiting_for_someone_by_responders_entries_and_votes(store: Store) -> None:
    named = make_request(created=1, responders=["person:ana", "slack:U0BOB"])
    by_group = make_request(created=2, responders=["group:oncall"])
    by_handle = make_request(created=3, responders=["Email:Ana@Example.com"])
    nobody = make_request(created=4)  # anyone may answer: it names nobody in particular
    voted = make_request(created=5, responders=["person:ana"])
    closed = make_request(created=6, responders=["person:ana"], state=RequestState.answered)
    for request in (named, by_group, by_handle, nobody, voted, closed):
        await store.create_request(request)
    await store.add_vote(Vote(voted.id, "person:ana", '{"ok": "yes"}', "ana", at(10)))
    await store.add_vote(Vote(named.id, "slack:U0BOB", '{"ok": "yes"}', "bob", at(10)))
    ana = RequestQuery(states=OPEN, responders_any=("person:ana", "group:oncall", "email:ana@example.com"),
                       not_voted_by=("person:ana", "email:ana@example.com"))
    assert await _ids(store, ana) == [by_handle.id, by_group.id, named.id]
    assert await store.count_requests(ana) == {"pending": 3}
    assert await store.count_requests(replace(ana, states=())) == {"pending": 3, "answered": 1}
    assert await _ids(store, RequestQuery(responders_any=("slack:u0bob",))) == [named.id]
    assert await _ids(store, RequestQuery(responders_any=("person:zoe",))) == []
    assert await _ids(store, RequestQuery(states=OPEN, not_voted_by=("person:ana",))) == [
        nobody.id, by_handle.id, by_group.id, named.id]


async def test_waiting_on_a_channel_by_the_copies_that_went_out(store: Store) -> None:
    """`posted_on`/`posted_to`: the Slack Home tab's and Telegram /pending's one read (no
    store call per request): only copies that went out (ok) count, on that channel."""
    here = make_request(created=1)
    elsewhere = make_request(created=2)
    failed = make_request(created=3)
    other_channel = make_request(created=4)
    never = make_request(created=5)
    closed = make_request(created=6, state=RequestState.answered)
    for request in (here, elsewhere, failed, other_channel, never, closed):
        await store.create_request(request)
    await store.add_post(Post(request_id=here.id, channel="telegram", target="telegram:42", at=at(1)))
    await store.add_post(Post(request_id=here.id, channel="telegram", target="telegram:7", at=at(1)))
    await store.add_post(Post(request_id=elsewhere.id, channel="telegram", target="telegram:7", at=at(2)))
    await store.add_post(Post(request_id=failed.id, channel="telegram", target="telegram:42", ok=False,
                              error="chat not found", at=at(3)))
    await store.add_post(Post(request_id=other_channel.id, channel="slack", target="telegram:42", at=at(4)))
    await store.add_post(Post(request_id=closed.id, channel="telegram", target="telegram:42", at=at(6)))
    on_telegram = RequestQuery(states=OPEN, posted_on="telegram")
    assert await _ids(store, on_telegram) == [elsewhere.id, here.id]
    assert await _ids(store, replace(on_telegram, posted_to=("telegram:42",))) == [here.id]
    assert await _ids(store, replace(on_telegram, posted_to=("telegram:1", "telegram:7"))) == [elsewhere.id, here.id]
    assert await store.count_requests(replace(on_telegram, states=())) == {"pending": 2, "answered": 1}
    with pytest.raises(ValueError, match="posted_on"):
        RequestQuery(posted_to=("telegram:42",))


async def test_oversized_queries_are_refused_before_the_store() -> None:
    with pytest.raises(ValueError, match="200 characters"):
        RequestQuery(text="x" * 201)
    with pytest.raises(ValueError, match="at most 200"):
        RequestQuery(responders_any=tuple(f"person:p{i}" for i in range(201)))
