"""Who cancels, and whose requests: the audit records the verified token (what the caller
claims is only a note), and a token cancels or waits on the requests it created — a token
with act_for_others, any. Through the real daemon's HTTP API and its `/mcp`, with real tokens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.harness import running_bridge
from tests.mcp.conftest import AGENT_TOKEN, OPS_TOKEN, mcp_config, over_http, text

OTHER = "other-token-0123456789abcd"
CONFIRM = [{"id": "ok", "kind": "confirm", "prompt": "Deploy api v2?"}]
CONFIG = mcp_config({"http": {"api_tokens": {"other": OTHER, "ops": {"token": OPS_TOKEN, "act_for_others": True}}}})


def client(bridge: Any, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=bridge.base_url, headers={"Authorization": f"Bearer {token}"})


async def create(bridge: Any, token: str = AGENT_TOKEN, **body: Any) -> str:
    async with client(bridge, token) as http:
        made = await http.post("/v1/requests", json={"title": "Deploy api v2", "questions": CONFIRM, **body})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def cancel(bridge: Any, request_id: str, token: str, **body: Any) -> httpx.Response:
    async with client(bridge, token) as http:
        return await http.post(f"/v1/requests/{request_id}/cancel", json=body)


async def test_the_audit_records_the_token_and_keeps_the_claim_as_a_note(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge:
        rid = await create(bridge)
        done = await cancel(bridge, rid, AGENT_TOKEN, actor="the-ceo", reason="not today")
        assert done.status_code == 200, done.text
        [event] = [e for e in await bridge.store.list_events(rid) if e.kind == "cancelled"]
        assert event.actor == "api:agent"
        assert event.data["claimed_actor"] == "the-ceo" and event.data["reason"] == "not today"


async def test_a_token_cancels_only_its_own_requests(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge:
        rid = await create(bridge)
        refused = await cancel(bridge, rid, OTHER, actor="api:agent")
        assert refused.status_code == 403, refused.text
        assert "created by api:agent" in refused.json()["detail"]
        request = await bridge.store.get_request(rid)
        assert request is not None and request.is_open
        assert "cancelled" not in [e.kind for e in await bridge.store.list_events(rid)]

        operator = await cancel(bridge, rid, OPS_TOKEN)  # act_for_others: any request
        assert operator.status_code == 200, operator.text
        [event] = [e for e in await bridge.store.list_events(rid) if e.kind == "cancelled"]
        assert event.actor == "api:ops" and "claimed_actor" not in event.data


async def test_a_token_waits_only_on_its_own_requests(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge:
        rid = await create(bridge)
        async with client(bridge, OTHER) as http:
            refused = await http.get(f"/v1/requests/{rid}", params={"wait": 1})
            assert refused.status_code == 403 and "wait on" in refused.json()["detail"], refused.text
            assert (await http.get(f"/v1/requests/{rid}")).status_code == 200  # reading it stays open to all
        async with client(bridge, AGENT_TOKEN) as http:
            assert (await http.get(f"/v1/requests/{rid}", params={"wait": 0.01})).status_code == 200


async def test_await_answer_refuses_another_tokens_request(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge:
        rid = await create(bridge, labels={"mcp_call": "ask_human"})  # as the agent's MCP call asks
        async with over_http(bridge, OTHER) as mcp:
            result = await mcp.call_tool("await_answer", {"request_id": rid, "wait_seconds": 1})
        assert result.is_error and "created by api:agent" in text(result), text(result)
        request = await bridge.store.get_request(rid)
        assert request is not None and request.is_open  # not waited on, so not cancelled when the call ends
