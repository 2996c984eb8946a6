"""The full ladder on a real daemon with a manual clock: reminders → level 1 → level 2 →
timeout answer, delivered to a real callback receiver."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from bridge.models import RequestState
from tests.harness import ManualClock, callback_receiver, wait_for
from tests.timing.helpers import answer, bridge_on, create, events, kinds, step, stored

LADDER: dict[str, Any] = {
    "routes": [{
        "name": "deploys",
        "notify": ["web:team"],
        "responders": ["api:ana", "api:bob"],
        "remind_every": "10m",
        "escalate": [{"after": "15m", "notify": ["web:lead"]},
                     {"after": "45m", "notify": ["web:boss"]}],
        "timeout": "2h",
        "on_timeout": {"answer": "no"},
    }],
}


async def test_full_ladder_reminders_levels_and_timeout_answer(tmp_path: Path) -> None:
    clock = ManualClock()
    async with callback_receiver() as receiver, bridge_on(tmp_path, clock, LADDER) as daemon:
        rid = await create(daemon, callback={"url": receiver.url, "secret": "s" * 32})
        request = await stored(daemon, rid)
        assert request.state is RequestState.posted
        assert request.deadline == clock.now() + timedelta(hours=2)
        assert await step(daemon, clock, minutes=9) == 0
        assert await events(daemon, rid, "reminded") == []

        assert await step(daemon, clock, minutes=1) == 1  # 10m: first reminder to the team
        reminded = await events(daemon, rid, "reminded")
        assert [e.data["targets"] for e in reminded] == [["web:team"]]

        await step(daemon, clock, minutes=5)  # 15m: level 1
        request = await stored(daemon, rid)
        assert request.escalation_level == 1
        assert request.targets == ["web:team", "web:lead"]
        assert request.responders == ["api:ana", "api:bob", "web:lead"]  # widened
        posts = [p.target for p in await daemon.store.list_posts(rid)]
        assert posts == ["web:team", "web:lead"]

        await step(daemon, clock, minutes=5)  # 20m: the reminder now reaches the lead too
        assert (await events(daemon, rid, "reminded"))[-1].data["targets"] == ["web:team", "web:lead"]

        for _ in range(5):  # 25m .. 45m
            await step(daemon, clock, minutes=5)
        request = await stored(daemon, rid)
        assert request.escalation_level == 2
        assert [p.target for p in await daemon.store.list_posts(rid)] == ["web:team", "web:lead", "web:boss"]
        escalated = await events(daemon, rid, "escalated")
        assert [(e.data["level"], e.data["notify"]) for e in escalated] == [(1, ["web:lead"]), (2, ["web:boss"])]

        while clock.now() < request.created_at + timedelta(minutes=115):
            await step(daemon, clock, minutes=5)
        assert (await stored(daemon, rid)).is_open
        await step(daemon, clock, minutes=5)  # 2h: the deadline answers "no" for everyone
        request = await stored(daemon, rid)
        assert request.state in (RequestState.expired, RequestState.delivered)
        assert request.answer is not None
        assert request.answer.values == {"ok": "no"}
        assert request.answer.via == "timeout"
        assert request.answer.responder.platform == "timeout"

        # 10m..110m: 11 reminders, none at 120m (the deadline closed it first), never twice
        reminded = await events(daemon, rid, "reminded")
        assert [e.data["n"] for e in reminded] == list(range(1, 12))
        await wait_for(lambda: receiver.received, 5)
        body = json.loads(receiver.received[0].body)
        assert body["state"] == "expired"
        assert body["answer"]["values"] == {"ok": "no"}
        assert body["answer"]["via"] == "timeout"

        # nothing more ever fires, and a late click is refused with who answered
        assert await step(daemon, clock, hours=5) == 0
        late = await answer(daemon, rid, "yes", "ana")
        assert late.status_code == 409
        assert "timeout" in late.text
        assert (await kinds(daemon, rid)).count("expired") == 1
        assert len(receiver.received) == 1


async def test_answer_stops_every_timer(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        rid = await create(daemon)
        await step(daemon, clock, minutes=10)
        response = await answer(daemon, rid, "yes", "ana")
        assert response.status_code == 200, response.text
        request = await stored(daemon, rid)
        assert request.next_reminder_at is None and request.next_escalation_at is None
        assert await step(daemon, clock, hours=3) == 0
        assert len(await events(daemon, rid, "reminded")) == 1
        assert await events(daemon, rid, "escalated") == []
        assert (await stored(daemon, rid)).answer.values == {"ok": "yes"}  # type: ignore[union-attr]
