"""A Teal service answering a resume call with an endless body is not read to its end: the
reply is cut at the limit, the decision counts as unclear (a rejection is sent again), and
the request is delivered once the service answers sensibly."""

from __future__ import annotations

from pathlib import Path

import httpx

from adapters.teal.source import MAX_REPLY_BYTES
from tests.engines.conftest import answer, engine_config
from tests.engines.fake_teal import FakeTeal, tool_call
from tests.engines.test_teal_e2e import _is, pause_in_bridge, teal_source
from tests.harness import running_bridge, wait_for


async def test_an_oversized_resume_reply_is_cut_and_the_rejection_retried(tmp_path: Path, teal: FakeTeal) -> None:
    config = engine_config(teal_source(teal, timeout="10s"), delivery={"first_retry": "50ms", "max_backoff": "100ms"})
    async with running_bridge(tmp_path, config) as bridge:
        rid = await pause_in_bridge(bridge, teal, [[tool_call("A", "one", {})]])
        teal.server.set_faults("error", error_status=200, remaining=1, only_methods=("POST",))
        teal.server.faults.raw_body = b" " * (MAX_REPLY_BYTES + 1024 * 1024)
        await answer(bridge, rid, {"tool_1": "no"})
        await wait_for(lambda: _is(bridge, rid, "delivered"))
        async with httpx.AsyncClient(base_url=bridge.base_url) as client:
            events = (await client.get(f"/v1/requests/{rid}/events")).json()["events"]
        errors = [e["data"].get("error", "") for e in events if e["kind"] == "delivery_retry"]
        assert any(f"over {MAX_REPLY_BYTES} bytes" in error for error in errors), errors
        assert [t.decisions for t in teal.tasks.values()] == [["reject"]]
