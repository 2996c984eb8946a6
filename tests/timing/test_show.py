"""`hitl-bridge show ID` prints the timeline (posted, reminders, levels, votes, timeout,
delivery), and `timing_notes` gives every copy its vote and escalation lines."""

from __future__ import annotations

import re
from pathlib import Path

from hitl_bridge_client import AsyncClient

from bridge.cli import render
from bridge.timing_view import timing_notes
from tests.harness import ManualClock, callback_receiver
from tests.timing.helpers import answer, bridge_on, create, step

CONFIG = {"routes": [{"name": "two-keys", "notify": ["web:team"], "quorum": 2,
                      "responders": ["api:ana", "api:bob"], "remind_every": "10m",
                      "escalate": [{"after": "15m", "notify": ["web:boss"]}],
                      "timeout": "1h", "on_timeout": {"answer": "no"}}]}


async def test_show_prints_the_whole_timeline(tmp_path: Path) -> None:
    clock = ManualClock()
    async with callback_receiver() as receiver, bridge_on(tmp_path, clock, CONFIG) as daemon:
        rid = await create(daemon, callback={"url": receiver.url, "secret": "s" * 32})
        await step(daemon, clock, minutes=10)
        assert (await answer(daemon, rid, "yes", "ana")).status_code == 200
        request = await daemon.store.get_request(rid)
        assert request is not None
        assert await timing_notes(daemon.service, request) == ["1 of 2 approvals: ana"]
        await step(daemon, clock, minutes=5)
        request = await daemon.store.get_request(rid)
        assert request is not None
        notes = await timing_notes(daemon.service, request)
        assert notes == ["1 of 2 approvals: ana", "Escalated to web:boss at 12:15 UTC"]
        clock.advance(minutes=45)
        await daemon.scheduler.run_due()
        await daemon.service.drain()

        async def delivered() -> bool:
            return any(e.kind == "delivered" for e in await daemon.store.list_events(rid))

        from tests.harness import wait_for
        await wait_for(delivered, 5)
        async with AsyncClient(daemon.base_url, token="") as client:  # what `hitl-bridge show` renders
            out = render.show(await client.get(rid), await client.events(rid))
    timeline = out.split("timeline")[1]
    kinds = re.findall(r"^\s+\S+ \S+ UTC\s+(\w+)", timeline, re.M)  # stamps are 24-hour with the zone
    assert kinds[:2] == ["created", "posted"]
    assert kinds.index("reminded") < kinds.index("vote") < kinds.index("escalated") < kinds.index("expired")
    assert kinds[-1] == "delivered"
    assert "1 of 2 approvals: ana" in out
    assert "reminders sent 1" in out
    assert "by timeout via timeout" in out
