"""The list (newest first, filters, live fragment with ETag), the audit timeline, retrying a
failed delivery, and hostile input on every inbox surface."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from bridge.models import RequestState
from tests.harness import ManualClock, callback_receiver, running_bridge, state_is, wait_for
from tests.web.helpers import CHOICE, CONFIRM, TEXT, Person, create, text_of

ROUTES = {"routes": [{"name": "deploys", "match": {"team": "platform"}, "notify": ["web"], "escalate": [
    {"after": "15m", "notify": ["web"]}], "timeout": "2h"}]}


async def test_list_is_newest_first_with_context_deadline_and_filters(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, ROUTES) as bridge, Person(bridge.base_url) as person:
        older = await create(bridge, {**TEXT, "context": {"ticket": "SUP-1"}, "agent": "support-bot"})
        newer = await create(bridge, {**CONFIRM, "labels": {"team": "platform"}})
        page = await person.get("/inbox")
        assert page.status_code == 200
        assert page.text.index(f"row-{newer}") < page.text.index(f"row-{older}")
        row = text_of(page.text)
        assert "support-bot" in row and "Reply in words" in row and "Approve or reject" in row
        assert 'data-deadline="' in page.text and ("in 1 h 59 min" in row or "in 2 h" in row)
        assert "SUP-1" in text_of((await person.open(older)).text)  # the context is on the request's page
        by_route = await person.get("/inbox?route=deploys")
        assert f"row-{newer}" in by_route.text and f"row-{older}" not in by_route.text
        by_source = await person.get("/inbox?source=nope")
        assert 'id="row-' not in by_source.text and "match the filter" in by_source.text
        await person.answer(older, {"q.reply": "done"})
        open_now = await person.get("/inbox")
        assert f"row-{older}" not in open_now.text and f"row-{newer}" in open_now.text
        answered = await person.get("/inbox?view=answered")
        assert f"row-{older}" in answered.text and "Answered by local in the inbox" in text_of(answered.text)


async def test_live_fragment_uses_etag_and_changes_when_a_request_arrives(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        waiting = await create(bridge, CONFIRM)
        await wait_for(lambda: state_is(bridge, waiting, RequestState.posted))  # posting follows the 201
        first = await person.get("/inbox/live?view=open")
        assert first.status_code == 200 and first.headers["etag"]
        same = await person.get("/inbox/live?view=open", headers={"If-None-Match": first.headers["etag"]})
        assert same.status_code == 304 and same.content == b""
        rid = await create(bridge, CHOICE)
        changed = await person.get("/inbox/live?view=open", headers={"If-None-Match": first.headers["etag"]})
        assert changed.status_code == 200 and f"row-{rid}" in changed.text
        detail = await person.get(f"/inbox/r/{rid}/live")
        assert 'data-open="true"' in detail.text
        await person.answer(rid, {"q.region": "eu-west-1"})
        after = await person.get(f"/inbox/r/{rid}/live", headers={"If-None-Match": detail.headers["etag"]})
        assert after.status_code == 200 and 'data-open="false"' in after.text


async def _parked(person: Person, feed: Any, url: str, last: httpx.Response
                  ) -> tuple[asyncio.Task[httpx.Response], str]:
    """A look at `url` with the version `last` saw, once it is parked on the feed (a change that
    slipped in between, such as a copy being recorded, answers it at once: look again)."""
    for _ in range(20):
        seen = last.headers["x-live-version"]
        looks = {"If-None-Match": last.headers["etag"], "X-Live-Seen": seen}
        held = asyncio.create_task(person.get(url, headers=looks))
        await wait_for(lambda: feed.watching_count() == 1 or held.done())  # noqa: B023
        if not held.done():
            return held, seen  # parked on the feed, reading nothing
        last = held.result() if held.result().status_code == 200 else await person.get(url)
    raise AssertionError("the look was never held: the feed kept moving")


async def test_live_fragment_is_held_until_something_changes(tmp_path: Path) -> None:
    """An open tab costs nothing while nothing happens: the page hands back the version it saw,
    and the daemon answers its next look when something changes (not at a poll interval)."""
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        posted = await create(bridge, CONFIRM)
        await wait_for(lambda: state_is(bridge, posted, RequestState.posted))
        feed = bridge.service.changes
        first = await person.get("/inbox/live?view=open")
        assert first.headers["x-live-version"] == feed.token
        held, seen = await _parked(person, feed, "/inbox/live?view=open", first)
        rid = await create(bridge, CHOICE)
        changed = await asyncio.wait_for(held, 10)
        assert changed.status_code == 200 and f"row-{rid}" in changed.text
        assert changed.headers["x-live-version"] != seen and feed.watching_count() == 0
        # the request's own fragment is held the same way, and wakes when it is answered
        await wait_for(lambda: state_is(bridge, rid, RequestState.posted))  # its posting moves the feed too
        detail = await person.get(f"/inbox/r/{rid}/live")
        held, _ = await _parked(person, feed, f"/inbox/r/{rid}/live", detail)
        await person.answer(rid, {"q.region": "eu-west-1"})
        after = await asyncio.wait_for(held, 10)
        assert after.status_code == 200 and 'data-open="false"' in after.text
        # a version from another replica or an earlier run, a stale one, or garbage: answered at once
        for other in ("0badf00d.1", seen, "x" * 5000, b"\xe9.\xff"):
            at_once = await person.get("/inbox/live?view=open", headers={"X-Live-Seen": other})
            assert at_once.status_code == 200 and feed.watching_count() == 0


async def test_a_held_look_lets_go_when_the_browser_goes(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge:
        feed = bridge.service.changes
        async with Person(bridge.base_url) as person:
            first = await person.get("/inbox/live?view=open")
            held, _ = await _parked(person, feed, "/inbox/live?view=open", first)
            held.cancel()  # the tab is closed: its connection with it
        # let go at the disconnect, well before anything else would end the hold (the store's idle
        # WAL truncation after 5 s moves the feed too; the hold itself lasts 25 s)
        await wait_for(lambda: feed.watching_count() == 0, timeout=3.0)


async def test_a_held_live_fragment_is_answered_when_the_daemon_stops(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        first = await person.get("/inbox/live?view=open")
        held = asyncio.create_task(person.get("/inbox/live?view=open",
                                              headers={"X-Live-Seen": first.headers["x-live-version"]}))
        await wait_for(lambda: bridge.service.changes.watching_count() == 1)
        bridge.service.changes.release_waiters()  # what a stop does first
        released = await asyncio.wait_for(held, 10)
        assert released.status_code == 200


async def test_timeline_shows_the_audit_trail(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, CONFIRM)
        await wait_for(lambda: state_is(bridge, rid, RequestState.posted))
        await person.answer(rid, {"q.ok": "yes", "reason": "looks good"})
        page = text_of((await person.open(rid)).text)
        timeline = page[page.index("History ("):]
        for kind in ("created", "posted", "answered"):
            assert kind in timeline
        assert "web:local" in timeline and "looks good" in page


async def test_retry_a_failed_delivery(tmp_path: Path) -> None:
    async with callback_receiver() as receiver, running_bridge(tmp_path) as bridge, \
            Person(bridge.base_url) as person:
        receiver.status = 410  # the engine said "gone": permanent failure
        rid = await create(bridge, {**CONFIRM, "callback": {"url": receiver.url, "secret": "s" * 32}})
        await person.answer(rid, {"q.ok": "yes"})
        await wait_for(lambda: state_is(bridge, rid, RequestState.failed))
        page = await person.open(rid)
        assert "Retry delivery" in page.text and "410" in text_of(page.text)
        failed_list = await person.get("/inbox?view=failed")
        assert f"row-{rid}" in failed_list.text
        receiver.status = 200
        retried = await person.submit(f"/inbox/r/{rid}/retry", {})
        assert retried.status_code == 303 and retried.headers["location"].endswith("done=retried")
        await wait_for(lambda: state_is(bridge, rid, RequestState.delivered))
        assert len(receiver.received) == 2
        events = await bridge.store.list_events(rid)
        assert any(e.kind == "redeliver" and e.actor == "web:local" for e in events)


async def test_retry_of_an_open_request_is_refused_clearly(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, CONFIRM)
        await person.open(rid)
        response = await person.submit(f"/inbox/r/{rid}/retry", {})
        assert response.status_code == 422 and "still open" in response.text


async def test_hostile_content_is_escaped(tmp_path: Path) -> None:
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    body = {"title": evil, "description": evil, "context": {"k": evil}, "labels": {"l": evil},
            "questions": [{"id": "c", "kind": "choice", "prompt": evil, "options": [evil, "ok"]}]}
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, body)
        for path in ("/inbox", "/inbox/live", f"/inbox/r/{rid}", f"/inbox/r/{rid}/live"):
            page = await person.get(path)
            assert page.status_code == 200
            assert "<script>alert" not in page.text and "<img src=x" not in page.text, path
            assert "script-src 'self'" in page.headers["content-security-policy"]
            assert page.headers["x-frame-options"] == "DENY"
        response = await person.answer(rid, {"q.c": evil})
        assert response.status_code == 303
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.answer is not None and stored.answer.values == {"c": evil}


async def test_bad_input_gets_a_clear_error_and_the_daemon_keeps_serving(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, {"http": {"max_body_bytes": 4096}}) as bridge, \
            Person(bridge.base_url) as person:
        rid = await create(bridge, TEXT)
        await person.open(rid)
        path = f"/inbox/r/{rid}/answer"
        assert (await person.get("/inbox/r/does-not-exist")).status_code == 404
        assert (await person.get("/inbox/r/..%2F..%2Fetc%2Fpasswd")).status_code == 404
        assert (await person.get("/inbox/r/" + "x" * 500)).status_code == 404
        assert (await person.submit("/inbox/r/nope/answer", {"q.reply": "hi"})).status_code == 404
        too_big = await person.submit(path, {"q.reply": "x" * 10_000})
        assert too_big.status_code == 413
        broken = await person.http.post(path, content=b"--xx\r\nbroken", headers={
            "Content-Type": "multipart/form-data; boundary=xx"})
        assert broken.status_code in (400, 403)
        as_json = await person.http.post(path, json={"csrf": person.csrf, "q.reply": "hi"})
        assert as_json.status_code == 403  # not a form: no CSRF token read
        weird = await person.get("/inbox?view=<x>&source=%00&offset=-5&route=" + "r" * 500)
        assert weird.status_code == 200
        latin = await person.http.post(path, content=b"csrf=" + person.csrf.encode() + b"&q.reply=caf\xe9",
                                       headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert latin.status_code == 303  # not UTF-8: read as Latin-1 by starlette, never a crash
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.answer is not None and stored.answer.values == {"reply": "café"}
        other = await create(bridge, TEXT)
        await person.open(other)
        unknown_fields = await person.submit(f"/inbox/r/{other}/answer",
                                             {"q.reply": "fine", "q.other": "x", "q.reply.extra": "y"})
        assert unknown_fields.status_code == 303
        stored = await bridge.service.get(other)
        assert stored is not None and stored.answer is not None and stored.answer.values == {"reply": "fine"}
        async with httpx.AsyncClient(base_url=bridge.base_url) as client:
            assert (await client.get("/healthz")).status_code == 200


async def test_escalation_level_and_deadline_are_shown(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, ROUTES) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, {**CONFIRM, "labels": {"team": "platform"}})
        page = text_of((await person.open(rid)).text)
        assert "not escalated" in page and "next 20" in page  # the first level's instant is shown
        await bridge.store.update_request(rid, escalation_level=2, now=bridge.clock.now())
        assert "escalated ×2" in (await person.get("/inbox")).text
        assert "level 2" in text_of((await person.get(f"/inbox/r/{rid}/live")).text)


async def test_answering_a_cancelled_request_says_so(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, CONFIRM)
        await person.open(rid)
        async with httpx.AsyncClient(base_url=bridge.base_url) as api:
            response = await api.post(f"/v1/requests/{rid}/cancel", json={"reason": "run deleted"})
            assert response.status_code == 200
        late = await person.submit(f"/inbox/r/{rid}/answer", {"q.ok": "yes"})
        assert late.status_code == 409 and "already cancelled" in late.text
        assert "run deleted" in text_of(late.text)
        assert "answer-form" not in late.text
        cancelled = await person.get("/inbox?view=cancelled")
        assert f"row-{rid}" in cancelled.text


async def test_too_many_fields_and_file_uploads_are_refused(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, {"http": {"max_body_bytes": 1024 * 1024}}) as bridge, \
            Person(bridge.base_url) as person:
        rid = await create(bridge, TEXT)
        await person.open(rid)
        path = f"/inbox/r/{rid}/answer"
        many = await person.submit(path, {f"f{i}": "x" for i in range(2000)})
        assert many.status_code == 400 and "could not be read" in many.text
        upload = await person.http.post(path, files={"up": ("a.txt", b"data")},
                                        data={"csrf": person.csrf, "q.reply": "x"})
        assert upload.status_code == 400
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.is_open
        assert (await person.submit(path, {"q.reply": "ok"})).status_code == 303


async def test_timing_notes_and_reminder_badge_are_shown(tmp_path: Path) -> None:
    clock = ManualClock()
    config = {"routes": [{"name": "two-keys", "notify": ["web"], "quorum": 2, "remind_every": "10m",
                          "escalate": [{"after": "15m", "notify": ["web:boss"]}], "timeout": "2h"}]}
    async with running_bridge(tmp_path, config, clock=clock) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, CONFIRM)
        fresh = text_of((await person.open(rid)).text)
        assert "Needs 2 approvals: 0 so far" in fresh and "reminded" not in fresh
        voted = await person.answer(rid, {"q.ok": "yes"})
        assert voted.headers["location"] == f"/inbox/r/{rid}?done=voted"

        clock.advance(minutes=10)  # one reminder
        assert await bridge.scheduler.run_due(clock.now()) == 1
        await bridge.service.drain()
        page = text_of((await person.open(rid)).text)
        assert "Needs 2 approvals: 1 so far (local: approved)" in page and "reminded ×1" in page
        row = text_of((await person.get("/inbox")).text)
        assert "1 of 2 approvals" in row and "reminded ×1" in row

        clock.advance(minutes=5)  # level 1
        await bridge.scheduler.run_due(clock.now())
        await bridge.service.drain()
        live = text_of((await person.get(f"/inbox/r/{rid}/live")).text)
        assert "1 so far (local: approved)" in live and "Escalated to web:boss at 12:15 UTC" in live
        assert "reminded ×1" in live
        assert "Escalated to web:boss" in text_of((await person.get("/inbox/live?view=open")).text)
