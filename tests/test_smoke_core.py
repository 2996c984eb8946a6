from __future__ import annotations

from pathlib import Path

import httpx

from tests.harness import callback_receiver, running_bridge, wait_for


async def test_request_answer_callback(tmp_path: Path) -> None:
    async with callback_receiver() as receiver, running_bridge(tmp_path) as bridge:
        async with httpx.AsyncClient(base_url=bridge.base_url) as client:
            r = await client.post("/v1/requests", json={
                "title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}],
                "callback": {"url": receiver.url, "secret": "s" * 32},
            })
            assert r.status_code == 201
            rid = r.json()["id"]
            r = await client.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})
            assert r.status_code == 200, r.text
            await wait_for(lambda: receiver.received)
            assert b'"ok":"yes"' in receiver.received[0].body
