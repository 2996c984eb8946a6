"""on_timeout (answer / fail / keep_waiting), per-request deadlines within max_timeout,
escalation `repeat` and `replace`, and the real APScheduler wake-up on the system clock."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from bridge.models import RequestState
from tests.harness import ManualClock, callback_receiver, running_bridge, wait_for
from tests.timing.helpers import answer, bridge_on, create, events, kinds, step, stored


def route(**extra: Any) -> dict[str, Any]:
    return {"routes": [{"name": "r", "notify": ["web:team"], **extra}]}


async def test_fail_on_timeout_sends_expired_without_an_answer(tmp_path: Path) -> None:
    clock = ManualClock()
    async with callback_receiver() as receiver, \
            bridge_on(tmp_path, clock, route(timeout="30m", on_timeout={"fail": True})) as daemon:
        rid = await create(daemon, callback={"url": receiver.url, "secret": "s" * 32})
        await step(daemon, clock, minutes=29, seconds=59)
        assert (await stored(daemon, rid)).is_open
        await step(daemon, clock, seconds=1)
        request = await stored(daemon, rid)
        assert request.answer is None
        assert request.error is not None and "no answer by" in request.error
        await wait_for(lambda: receiver.received, 5)
        body = json.loads(receiver.received[0].body)
        assert receiver.received[0].headers["x-hitl-event"] == "expired"
        assert body["state"] == "expired" and body["answer"] is None


async def test_no_on_timeout_means_fail(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, route()) as daemon:
        rid = await create(daemon, timeout_s=90)
        await step(daemon, clock, seconds=90)
        request = await stored(daemon, rid)
        assert request.state is RequestState.expired and request.answer is None


async def test_keep_waiting_records_the_deadline_and_keeps_reminding(tmp_path: Path) -> None:
    clock = ManualClock()
    config = route(timeout="20m", remind_every="15m", on_timeout={"keep_waiting": True})
    async with bridge_on(tmp_path, clock, config) as daemon:
        rid = await create(daemon)
        await step(daemon, clock, minutes=20)
        request = await stored(daemon, rid)
        assert request.is_open and request.deadline is None
        passed = await events(daemon, rid, "deadline_passed")
        assert len(passed) == 1 and passed[0].data["on_timeout"] == "keep_waiting"
        await step(daemon, clock, minutes=10)  # 30m: reminders go on
        assert len(await events(daemon, rid, "reminded")) == 2
        assert (await answer(daemon, rid, "yes", "ana")).status_code == 200
    async with bridge_on(tmp_path, clock, config) as daemon:  # a restart does not re-fire it
        assert len(await events(daemon, rid, "deadline_passed")) == 1


async def test_request_timeout_overrides_the_route_within_max_timeout(tmp_path: Path) -> None:
    clock = ManualClock()
    config = route(timeout="2h", max_timeout="3h", on_timeout={"fail": True})
    async with bridge_on(tmp_path, clock, config) as daemon:
        short = await create(daemon, timeout_s=60)
        long = await create(daemon, timeout_s=10 * 3600)
        explicit = await create(daemon, deadline=(clock.now() + timedelta(minutes=5)).isoformat())
        plain = await create(daemon)
        now = clock.now()
        assert (await stored(daemon, short)).deadline == now + timedelta(seconds=60)
        assert (await stored(daemon, long)).deadline == now + timedelta(hours=3)  # capped
        assert (await stored(daemon, explicit)).deadline == now + timedelta(minutes=5)
        assert (await stored(daemon, plain)).deadline == now + timedelta(hours=2)
        await step(daemon, clock, minutes=1)
        assert not (await stored(daemon, short)).is_open
        assert (await stored(daemon, explicit)).is_open


async def test_deadline_already_past_at_submit_fires_at_once(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, route(on_timeout={"answer": "no"})) as daemon:
        rid = await create(daemon, deadline=(clock.now() - timedelta(minutes=1)).isoformat())
        await daemon.scheduler.run_due()  # or the APScheduler wake-up already did it
        await daemon.service.drain()
        request = await stored(daemon, rid)
        assert (await kinds(daemon, rid)).count("expired") == 1
        assert request.answer is not None and request.answer.values == {"ok": "no"}


async def test_timeout_answer_invalid_for_the_question_fails_naming_route_and_key(tmp_path: Path) -> None:
    clock = ManualClock()
    questions = [{"id": "env", "kind": "choice", "prompt": "Where?", "options": ["staging", "prod"]}]
    async with bridge_on(tmp_path, clock, route(timeout="1h", on_timeout={"answer": "no"})) as daemon:
        rid = await create(daemon, questions=questions)
        await step(daemon, clock, hours=1)
        request = await stored(daemon, rid)
        assert request.state is RequestState.expired and request.answer is None
        assert request.error is not None
        assert "route 'r'" in request.error and "on_timeout.answer" in request.error
        assert "expected one of" in request.error


async def test_repeat_pages_a_level_again_and_pushes_later_levels_back(tmp_path: Path) -> None:
    clock = ManualClock()
    config = route(escalate=[{"after": "15m", "notify": ["web:lead"], "repeat": 2},
                             {"after": "45m", "notify": ["web:boss"]}])
    async with bridge_on(tmp_path, clock, config) as daemon:
        rid = await create(daemon)
        timeline: list[tuple[int, list[str]]] = []
        for minute in range(5, 95, 5):
            await step(daemon, clock, minutes=5)
            timeline += [(minute, [e.kind for e in await events(daemon, rid) if e.at == clock.now()
                                   and e.kind in ("escalated", "escalation_repeat")])]
        fired = [(m, k) for m, k in timeline if k]
        # level 1 at 15m, repeats every 15m (30m, 45m), level 2 pushed from 45m to 75m
        assert fired == [(15, ["escalated"]), (30, ["escalation_repeat"]), (45, ["escalation_repeat"]),
                         (75, ["escalated"])]
        assert [p.target for p in await daemon.store.list_posts(rid)] == ["web:team", "web:lead", "web:boss"]
        assert (await stored(daemon, rid)).next_escalation_at is None


async def test_replace_hands_the_request_over(tmp_path: Path) -> None:
    clock = ManualClock()
    config = route(responders=["api:ana"], remind_every="20m",
                   escalate=[{"after": "15m", "notify": ["web:boss", "slack:@U0BOSS"], "replace": True}])
    # Slack configured but unreachable (nothing listens on port 1): its copy fails
    config["slack"] = {"bot_token": "xoxb-unreachable", "signing_secret": "s", "api_url": "http://127.0.0.1:1/api/",
                       "max_attempts": 1, "backoff_s": 0}
    async with bridge_on(tmp_path, clock, config) as daemon:
        rid = await create(daemon)
        await step(daemon, clock, minutes=20)
        request = await stored(daemon, rid)
        assert request.targets == ["web:boss", "slack:@U0BOSS"]
        assert request.responders == ["web:boss", "slack:@U0BOSS", "slack:U0BOSS"]
        reminded = await events(daemon, rid, "reminded")
        assert reminded[-1].data["targets"] == ["web:boss", "slack:@U0BOSS"]
        # Slack unreachable: the copy fails visibly, the request carries on
        assert "post_failed" in await kinds(daemon, rid)


async def test_apscheduler_wakes_the_daemon_on_the_real_clock(tmp_path: Path) -> None:
    """No manual stepping: the APScheduler job fires the deadline by itself."""
    async with running_bridge(tmp_path, route(on_timeout={"answer": "yes"})) as daemon:
        rid = await create(daemon, timeout_s=0.2)

        async def closed() -> bool:
            return not (await stored(daemon, rid)).is_open

        await wait_for(closed, 5)
        request = await stored(daemon, rid)
        assert request.answer is not None and request.answer.via == "timeout"
        assert request.deadline is not None
        assert request.answer.answered_at >= request.deadline
