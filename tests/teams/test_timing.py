"""Reminders and escalation as Teams shows them, driven by the core's timers: a reply in
the card's thread, a one-to-one chat for the next level, every copy kept up to date."""

from __future__ import annotations

import json
from pathlib import Path

from adapters.teams.cards import APPROVE
from tests.fakes.teams_api import FakeTeams
from tests.harness import ManualClock, wait_for
from tests.teams.conftest import BEN, CHANNEL, confirm_body, teams_bridge


async def test_a_reminder_is_a_reply_and_escalation_opens_a_chat(tmp_path: Path, fake: FakeTeams) -> None:
    clock = ManualClock()
    route = {"remind_every": "10m", "escalate": [{"after": "15m", "notify": [f"teams:user:{BEN}"]}], "timeout": "2h"}
    async with teams_bridge(tmp_path, fake, route=route, clock=clock) as bridge:
        await bridge.install()
        request_id = await bridge.create(confirm_body())
        [first] = await bridge.card_in(CHANNEL)
        clock.advance(minutes=11)
        await bridge.daemon.scheduler.run_due(clock.now())
        [reply] = await wait_for(lambda: fake.replies(first.id), 10)
        assert "Reminder" in reply.body["text"]
        clock.advance(minutes=5)
        await bridge.daemon.scheduler.run_due(clock.now())
        [dm] = await bridge.card_in(f"a:personal-{BEN}")
        await wait_for(lambda: f"Escalated to teams:user:{BEN}" in json.dumps(first.body), 10)
        await bridge.click(APPROVE, {"request_id": request_id}, who=BEN, name="Ben", personal=True)
        await bridge.closed(request_id)
        for copy in (first, dm):
            await wait_for(lambda c=copy: "Approved by Ben" in json.dumps(c.body, ensure_ascii=False), 10)
