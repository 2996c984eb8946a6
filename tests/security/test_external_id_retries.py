"""An `external_id` makes a retry find its request, and nothing else: the same caller (its
token), the same route, the same content. Anything else is 409 naming what differs, and two
tokens using the same id never meet. Through the real daemon's HTTP API, with real tokens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.harness import running_bridge

AGENT, OTHER, OPS = "agent-token-0123456789ab", "other-token-0123456789ab", "ops-token-0123456789abcd"
CONFIRM = [{"id": "ok", "kind": "confirm", "prompt": "Deploy api v2?"}]
CONFIG: dict[str, Any] = {
    "http": {"api_tokens": {"agent": AGENT, "other": OTHER, "ops": OPS}},
    "people": {"ops": ["api:ops"]},
    "routes": [
        {"name": "prod", "match": {"labels.env": "prod"}, "notify": ["web"], "responders": ["person:ops"],
         "forbid_self_approval": True},
        {"name": "loose", "match": {"labels.env": "dev"}, "notify": ["web"]},
    ],
}


def client(bridge: Any, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=bridge.base_url, headers={"Authorization": f"Bearer {token}"})


async def create(bridge: Any, token: str, **body: Any) -> httpx.Response:
    async with client(bridge, token) as http:
        return await http.post("/v1/requests", json={"title": "Deploy api v2", "questions": CONFIRM, **body})


async def test_an_answer_on_a_loose_route_is_not_handed_to_the_production_route(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge:
        loose = await create(bridge, AGENT, external_id="deploy-42", labels={"env": "dev"})
        assert loose.status_code == 201, loose.text
        async with client(bridge, AGENT) as http:
            answered = await http.post(f"/v1/requests/{loose.json()['id']}/answer", json={"value": "yes"})
        assert answered.status_code == 200, answered.text

        again = await create(bridge, AGENT, external_id="deploy-42", labels={"env": "prod"})
        assert again.status_code == 409, again.text
        assert "route" in again.json()["differs"] and "content" in again.json()["differs"]
        assert "'loose', now 'prod'" in again.json()["detail"]
        assert "approved" not in again.text and '"yes"' not in again.text  # the answer is not handed back


async def test_a_retry_is_the_same_request_by_the_same_caller(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge:
        body: dict[str, Any] = {"external_id": "job-7", "labels": {"env": "prod"}, "context": {"sha": "abc"},
                                "timeout_s": 3600}
        first = await create(bridge, AGENT, **body)
        assert first.status_code == 201, first.text
        retry = await create(bridge, AGENT, **{**body, "timeout_s": 3599})  # a deadline computed again
        assert retry.status_code == 200 and retry.json()["id"] == first.json()["id"], retry.text

        for change in ({"context": {"sha": "evil"}}, {"title": "Drop the database"},
                       {"questions": [{"id": "ok", "kind": "confirm", "prompt": "Drop it?"}]},
                       {"responders": ["person:ops"]}, {"description": "also wipe backups"}):
            conflict = await create(bridge, AGENT, **{**body, **change})
            assert conflict.status_code == 409, (change, conflict.text)
            assert conflict.json()["differs"] == ["content"], conflict.text
        assert len(await bridge.store.list_requests()) == 1


async def test_two_tokens_with_the_same_external_id_never_meet(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge:
        body: dict[str, Any] = {"external_id": "mcp:toolu_01", "labels": {"env": "dev"}}
        planted = await create(bridge, OTHER, **body)
        assert planted.status_code == 201, planted.text
        async with client(bridge, OTHER) as http:
            assert (await http.post(f"/v1/requests/{planted.json()['id']}/answer",
                                    json={"value": "yes"})).status_code == 200
        mine = await create(bridge, AGENT, **body)  # the very same body, another token
        assert mine.status_code == 201, mine.text
        assert mine.json()["id"] != planted.json()["id"] and mine.json()["state"] in ("pending", "posted")
        assert mine.json()["answer"] is None and mine.json()["created_by"] == "api:agent"
        # each token's retry still finds its own
        assert (await create(bridge, OTHER, **body)).json()["id"] == planted.json()["id"]
        assert (await create(bridge, AGENT, **body)).json()["id"] == mine.json()["id"]


async def test_the_structured_request_id_is_scoped_and_checked_alike(tmp_path: Path) -> None:
    structured: dict[str, Any] = {"request_id": "q-1", "objective": "Pick an environment", "questions": [
        {"id": "env", "question": "Which?", "input_type": "selection", "options": ["staging", "prod"]}]}
    async with running_bridge(tmp_path, CONFIG) as bridge, client(bridge, AGENT) as mine, \
            client(bridge, OTHER) as other:
        first = await mine.post("/v1/requests", json=structured)
        assert first.status_code == 201, first.text
        assert (await other.post("/v1/requests", json=structured)).status_code == 201
        changed = await mine.post("/v1/requests", json={**structured, "objective": "Pick prod"})
        assert changed.status_code == 409 and changed.json()["differs"] == ["content"], changed.text
