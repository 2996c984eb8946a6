"""Hostile or stale input reaching the timers: absurd timeouts, a route that vanished
from the config between restarts, an answer racing the deadline."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx

from bridge.models import RequestState
from bridge.timers import LONGEST
from tests.harness import ManualClock
from tests.timing.helpers import answer, bridge_on, create, events, kinds, step, stored
from tests.timing.test_ladder import LADDER


async def test_huge_and_infinite_timeouts_are_capped_not_crashed(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, {"routes": [{"notify": ["web"]}]}) as daemon:
        huge = await create(daemon, timeout_s=1e15)
        async with httpx.AsyncClient(base_url=daemon.base_url) as client:
            raw = (b'{"title": "t", "questions": [{"id": "ok", "kind": "confirm", "prompt": "p"}], '
                   b'"timeout_s": Infinity}')
            response = await client.post("/v1/requests", content=raw,
                                         headers={"Content-Type": "application/json"})
            assert response.status_code == 422, response.text  # not a number of seconds
            assert "timeout_s" in response.text
            far = await client.post("/v1/requests", json={
                "title": "t", "questions": [{"id": "ok", "kind": "confirm", "prompt": "p"}],
                "deadline": "9999-12-31T23:59:59Z"})
            assert far.status_code == 201, far.text
            nan = await client.post("/v1/requests", content=raw.replace(b"Infinity", b"NaN"),
                                    headers={"Content-Type": "application/json"})
            assert nan.status_code == 422
        now = clock.now()
        assert (await stored(daemon, huge)).deadline == now + LONGEST
        assert (await stored(daemon, far.json()["id"])).deadline == now + LONGEST
        assert await daemon.scheduler.run_due() == 0
        assert (await daemon.store.get_request(huge)) is not None


async def test_a_route_removed_between_restarts_still_rules_its_open_requests(tmp_path: Path) -> None:
    """An open request keeps the rules it was created under (bridge.rules): its route's
    reminders, levels and on_timeout go on after the route is gone from the config."""
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        rid = await create(daemon)
    clock.advance(minutes=30)  # reminder and escalation of the old route are due
    async with bridge_on(tmp_path, clock, {"routes": [{"name": "other", "notify": ["web"]}]}) as daemon:
        await step(daemon, clock, minutes=0)
        request = await stored(daemon, rid)
        assert request.is_open and request.route == "deploys"
        assert await events(daemon, rid, "reminded") != []
        assert await events(daemon, rid, "escalated") != []
        await step(daemon, clock, hours=2)  # the route's on_timeout (answer no), not the default's (fail)
        request = await stored(daemon, rid)
        assert request.state is RequestState.expired and request.answer is not None
        assert request.answer.via == "timeout" and request.answer.values == {"ok": "no"}


async def test_an_answer_at_the_deadline_instant_wins_once(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        rid = await create(daemon, timeout_s=60)
        clock.advance(seconds=60)  # due, but the person is faster than the timer
        assert (await answer(daemon, rid, "yes", "ana")).status_code == 200
        assert await daemon.scheduler.run_due() == 0
        await daemon.service.drain()
        request = await stored(daemon, rid)
        assert request.answer is not None and request.answer.values == {"ok": "yes"}
        assert "expired" not in await kinds(daemon, rid)


async def test_config_change_shortening_reminders_takes_effect_after_restart(tmp_path: Path) -> None:
    """Stored instants win until they fire; then the current route decides the next one."""
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        rid = await create(daemon)
    changed = {"routes": [{**LADDER["routes"][0], "remind_every": "3m"}]}
    async with bridge_on(tmp_path, clock, changed) as daemon:
        await step(daemon, clock, minutes=10)  # the stored 10m reminder fires
        request = await stored(daemon, rid)
        assert request.next_reminder_at == request.created_at + timedelta(minutes=12)  # new 3m grid
