"""A request shown only in the web inbox is stored `posted` with its copy and its events in
the create's own transaction (nothing is left to send). A sending channel still posts after
the create: tests/store/test_create_posted.py (both stores)."""

from __future__ import annotations

from pathlib import Path

import httpx

from bridge.audit.verify import verify_store
from tests.harness import running_bridge

BODY = {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}]}


async def test_a_create_shown_in_the_inbox_is_answered_posted(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        created = await client.post("/v1/requests", json={**BODY, "external_id": "run-1"})
        assert created.status_code == 201 and created.json()["state"] == "posted"
        request_id = created.json()["id"]
        assert not bridge.service._tasks  # nothing posts in the background
        posts = await bridge.store.list_posts(request_id)
        assert [(p.channel, p.target, p.ok, p.ref) for p in posts] == [
            ("web", "web", True, {"path": f"/inbox/r/{request_id}"})]
        events = (await client.get(f"/v1/requests/{request_id}/events")).json()
        kinds = [e["kind"] for e in (events["events"] if isinstance(events, dict) else events)]
        assert kinds == ["created", "posted"]
        assert (await verify_store(bridge.store)).ok
        again = await client.post("/v1/requests", json={**BODY, "external_id": "run-1"})
        assert again.status_code == 200 and again.json()["state"] == "posted"
        assert len(await bridge.store.list_posts(request_id)) == 1  # a retry adds no copy
        metrics = (await client.get("/metrics")).text
        assert 'hitl_posts_total{channel="web",result="ok"} 1.0' in metrics
