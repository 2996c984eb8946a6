"""Held live looks stay cheap (issue 24): a session and an address hold only so many at once
(the rest are answered at once with 429 and their page refreshes on its interval), and
identical looks woken by one change share one render. Through the real daemon, with real
inbox sessions; renders are counted on /metrics."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx

from bridge.models import RequestState
from tests.harness import running_bridge, state_is, wait_for
from tests.web.helpers import CONFIRM, Person, create

PASSWORD = "open-sesame-42"
SEARCH = "/inbox/live?q=deploy"
CONFIG = {"web": {"password": PASSWORD, "live_held_per_session": 4, "live_held_per_address": 12},
          "http": {"trusted_proxies": ["127.0.0.1"]}}


async def metric(http: httpx.AsyncClient, name: str, view: str | None = None) -> float:
    text = (await http.get("/metrics")).text
    label = r'\{view="' + view + r'"\}' if view else ""
    found = re.search("^" + name + label + r" ([0-9.e+]+)$", text, re.M)
    assert found is not None, (name, text[:2000])
    return float(found.group(1))


async def test_held_looks_are_bounded_and_share_one_render_per_change(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge, Person(bridge.base_url) as ana, \
            Person(bridge.base_url) as bo, Person(bridge.base_url) as cy:
        rid = await create(bridge, {**CONFIRM, "title": "Deploy api v2"})
        await wait_for(lambda: state_is(bridge, rid, RequestState.posted))
        feed = bridge.service.changes
        for person, name in ((ana, "ana"), (bo, "bo"), (cy, "cy")):
            assert (await person.login(PASSWORD, name=name)).status_code == 303
        for _ in range(10):  # a change that slips in before all are parked (the store's idle upkeep): again
            seen = (await ana.get(SEARCH)).headers["x-live-version"]
            looks = {"X-Live-Seen": seen}
            held = [asyncio.create_task(p.http.get(SEARCH, headers=looks)) for p in (ana, bo, cy) for _ in range(4)]
            await wait_for(lambda: feed.watching_count() == 12 or any(t.done() for t in held))  # noqa: B023
            if not any(t.done() for t in held):
                break  # four per session, all parked
            await asyncio.gather(*held)  # the feed moved: every look is answered
        else:
            raise AssertionError("the looks were never all held: the feed kept moving")
        assert await metric(ana.http, "hitl_inbox_live_held") == 12
        excess = [await p.http.get(SEARCH, headers=looks) for p in (ana, bo, cy)]  # a fifth tab each
        for refused in excess:
            assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
            assert "live views" in refused.text and refused.headers["x-live-version"] == seen
        async with Person(bridge.base_url) as dana:  # another session at the same address (all 127.0.0.1)
            assert (await dana.login(PASSWORD, name="dana")).status_code == 303
            assert (await dana.http.get(SEARCH, headers=looks)).status_code == 429  # the address is full
            dana.http.headers["X-Forwarded-For"] = "198.51.100.4"  # another address: it may hold one
            other = asyncio.create_task(dana.http.get(SEARCH, headers=looks))
            await wait_for(lambda: feed.watching_count() == 13)
            assert all(not task.done() for task in held)
            assert await metric(ana.http, "hitl_inbox_live_refused_total") == 4
            before = await metric(ana.http, "hitl_inbox_live_renders_total", "list")

            await bridge.service.cancel(rid, actor="test", reason="one change")  # wakes every look
            answered = [await asyncio.wait_for(task, 30) for task in [*held, other]]
        assert {r.status_code for r in answered} == {200}
        assert len({r.content for r in answered}) == 1  # the same bytes for every identical look
        versions = {r.headers["x-live-version"] for r in answered}
        renders = await metric(ana.http, "hitl_inbox_live_renders_total", "list") - before
        assert 1 <= renders <= len(versions) <= 2, (renders, versions)  # one per version, not one per look
        assert await metric(ana.http, "hitl_inbox_live_held") == 0


async def test_a_client_that_looks_again_at_once_is_paced_to_its_interval(tmp_path: Path) -> None:
    """A page looks at most once an interval; a client that looks again at once (a stale
    version, many tabs) gets at most `live_held_per_session` answers an interval, and the
    next look waits for the next interval (a closed tab stops waiting)."""
    config = {"web": {"password": PASSWORD, "live_held_per_session": 2, "live_held_per_address": 64,
                      "poll_interval_s": 60}}
    async with running_bridge(tmp_path, config) as bridge, Person(bridge.base_url) as ana:
        assert (await ana.login(PASSWORD, name="ana")).status_code == 303
        stale = {"X-Live-Seen": "not-the-current-version"}  # answered at once, never held
        for _ in range(2):
            assert (await ana.http.get(SEARCH, headers=stale)).status_code == 200
        third = asyncio.create_task(ana.http.get(SEARCH, headers=stale))
        await wait_for(lambda: metric_is(ana.http, "hitl_inbox_live_paced", 1))  # parked until the next interval
        assert not third.done()
        async with Person(bridge.base_url) as bo:  # another session at the same address is not held back by ana's
            assert (await bo.login(PASSWORD, name="bo")).status_code == 303
            assert (await bo.http.get(SEARCH, headers=stale)).status_code == 200
        third.cancel()
        await asyncio.gather(third, return_exceptions=True)


async def metric_is(http: httpx.AsyncClient, name: str, value: float) -> bool:
    return await metric(http, name) == value
