"""A request cancelled while its copies go out: the copy that went out anyway is taken back
(it says cancelled), and the audit never shows `posted` after `cancelled`. A real daemon on
the fake Telegram Bot API, whose sendMessage is held until the cancel is done."""

from __future__ import annotations

from pathlib import Path

import httpx

from bridge.models import RequestState
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.helpers import closed, confirm, submit, telegram_bridge


async def test_a_cancel_during_posting_takes_the_copy_back(tmp_path: Path, fake: FakeTelegram) -> None:
    fake.person(42, "Ann")
    gate = fake.hold("sendMessage")
    try:
        async with telegram_bridge(tmp_path, fake) as bridge:
            rid = await submit(bridge, confirm("Rotate the prod keys"))
            await fake.wait_for(lambda: any(c.method == "sendMessage" for c in fake.calls))  # the copy is on its way
            async with httpx.AsyncClient(base_url=bridge.base_url) as http:
                cancelled = await http.post(f"/v1/requests/{rid}/cancel", json={"reason": "wrong keys"})
            assert cancelled.status_code == 200, cancelled.text
            gate.set()  # the message goes out after the cancel
            await bridge.service.drain()
            request = await closed(bridge, rid)
            assert request.state is RequestState.cancelled

            message = await fake.wait_for(lambda: next(
                (m for m in fake.sent_to(42) if "Rotate the prod keys" in m["text"] and "Cancelled" in m["text"]),
                None))
            assert message.get("reply_markup") in (None, {}, {"inline_keyboard": []})  # nothing to press
            kinds = [e.kind for e in await bridge.store.list_events(rid)]
            assert "cancelled" in kinds
            assert "posted" not in kinds[kinds.index("cancelled"):], kinds
            assert [p.target for p in await bridge.store.list_posts(rid) if p.ok] == ["telegram:42"]  # kept, to update
    finally:
        gate.set()


async def test_a_request_closed_before_posting_is_shown_nowhere(tmp_path: Path, fake: FakeTelegram) -> None:
    fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake) as bridge:
        rid = await submit(bridge, confirm("Deploy on Friday"))
        await bridge.service.drain()
        await bridge.service.cancel(rid, actor="test", reason="changed my mind")
        sent = len(fake.calls_of("sendMessage"))
        request = await bridge.store.get_request(rid)
        assert request is not None
        results = await bridge.service.post(request, ["telegram:42"])  # as an escalation step would
        assert [r.ok for r in results] == [False] and "cancelled" in (results[0].error or "")
        assert len(fake.calls_of("sendMessage")) == sent  # nothing new went out
