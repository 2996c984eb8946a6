"""Timing notes on Slack copies: after a vote on a quorum route and after an escalation,
chat.update carries the `bridge.timing_view` lines ("1 of 2 approvals: …", "Escalated to
…"), and the escalation's own post shows them from the start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.slack_api import FakeSlack
from tests.harness import ManualClock, wait_for
from tests.slack.conftest import confirm_body, slack_bridge


def updates_of(fake: FakeSlack, message: dict[str, Any], after: int = 0) -> list[str]:
    """The blocks (as JSON text) of each chat.update of `message`, from the `after`-th call on."""
    return [json.dumps(c.args.get("blocks"), ensure_ascii=False)
            for c in fake.calls_of("chat.update")[after:]
            if c.args.get("ts") == message["ts"] and c.response.get("ok")]


async def test_vote_and_escalation_are_shown_on_every_slack_copy(tmp_path: Path, fake: FakeSlack) -> None:
    clock = ManualClock()
    route = {"quorum": 2, "responders": ["slack:U0ALICE", "slack:U0BOB"],
             "escalate": [{"after": "15m", "notify": ["slack:@U0BOB"]}], "timeout": "2h"}
    async with slack_bridge(tmp_path, fake, route=route, clock=clock) as b:
        rid = await b.create(confirm_body())
        first = await b.message_of(rid)
        assert "approvals" not in json.dumps(first["blocks"])  # nothing to say yet

        await b.person.click(first, "hitl:approve")  # vote 1 of 2
        voted = await wait_for(lambda: [u for u in updates_of(fake, first) if "1 of 2 approvals" in u], 5)
        assert "1 of 2 approvals: alice" in voted[-1]
        assert "Votes so far" not in voted[-1] and "hitl:approve" in voted[-1]  # still open
        assert (await b.stored(rid)).is_open

        seen = len(fake.calls_of("chat.update"))
        clock.advance(minutes=15)
        assert await b.daemon.scheduler.run_due(clock.now()) >= 1
        escalated = await wait_for(lambda: [u for u in updates_of(fake, first, seen) if "Escalated to" in u], 5)
        assert "Escalated to slack:@U0BOB at 12:15 UTC" in escalated[-1]
        assert "1 of 2 approvals: alice" in escalated[-1]  # the vote line stays
        assert "Escalated (level" not in escalated[-1]

        dm = await b.message_of(rid, "D0BOB")  # the escalation's post, as first sent
        shown = json.dumps(dm["blocks"], ensure_ascii=False)
        assert "1 of 2 approvals: alice" in shown and "Escalated to slack:@U0BOB" in shown

        await b.person.as_user("U0BOB").click(dm, "hitl:approve")  # vote 2 of 2: closed
        await b.closed(rid)
        for message in (first, dm):
            final = await wait_for(lambda m=message: (t := json.dumps(
                fake.messages[(m["channel"], m["ts"])]["blocks"])) and "Approved by" in t and t, 5)
            assert "approvals" not in final and "Escalated to" not in final
