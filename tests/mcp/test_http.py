"""`/mcp` in a real daemon (Streamable HTTP) with the real `mcp` client: behind the bearer
token, Host and Origin checks; requests are the token's own (`forbid_self_approval`);
people answer in the Slack fake; a cancelled call cancels; a restart loses nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hitl_bridge_client import verify_receipt
from mcp import MCPError

from bridge.daemon import Daemon
from bridge.models import RequestState
from tests.fakes.slack_api import FakeSlack
from tests.harness import make_settings, running_bridge, wait_for
from tests.mcp.conftest import (
    AGENT_TOKEN,
    OPS_TOKEN,
    GetTask,
    TaskRef,
    TasksClient,
    TaskState,
    answer,
    free_port,
    mcp_config,
    next_request,
    over_http,
    stored,
    text,
)
from tests.slack.conftest import CHANNEL, SIGNING_SECRET, slack_section
from tests.slack.person import Person

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
async def fake() -> Any:
    async with FakeSlack() as server:
        yield server


async def post_mcp(base: str, body: Any, token: str | None = AGENT_TOKEN, **headers: str) -> httpx.Response:
    sent = {**MCP_HEADERS, **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(base_url=base) as http:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return await http.post("/mcp", content=content, headers=sent)


async def test_mcp_is_behind_the_token_and_the_host_and_origin_checks(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, mcp_config({"http": {"max_body_bytes": 4096}})) as bridge:
        base = bridge.base_url
        missing = await post_mcp(base, INITIALIZE, token=None)
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        assert (await post_mcp(base, INITIALIZE, token="wrong-token-0123456789")).status_code == 401
        cross = await post_mcp(base, INITIALIZE, Origin="http://evil.example")
        assert cross.status_code == 403 and "cross-site" in cross.json()["detail"]
        assert (await post_mcp(base, INITIALIZE, Host="evil.example")).status_code == 400  # DNS rebinding
        assert (await post_mcp(base, b"{not json")).status_code == 400
        assert (await post_mcp(base, INITIALIZE, **{"Content-Type": "text/plain"})).status_code == 400
        huge = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": "x" * 10_000}}
        assert (await post_mcp(base, huge)).status_code == 413
        assert (await post_mcp(base, [1, 2, 3])).status_code == 400
        opened = await post_mcp(base, INITIALIZE, Origin=base)  # the bridge's own origin is fine
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        ours = await post_mcp(base, listing, **{"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
        assert ours.status_code == 200 and "permission_prompt" in ours.text
        # a session belongs to the token that opened it
        theirs = await post_mcp(base, listing, token=OPS_TOKEN,
                                **{"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
        assert theirs.status_code == 404
        assert await bridge.store.list_requests() == []


async def test_open_bridge_on_loopback_needs_no_token_and_mcp_needs_the_intake(tmp_path: Path) -> None:
    config = {"sources": [{"type": "webhook"}, {"type": "mcp"}]}
    async with running_bridge(tmp_path, config) as bridge, over_http(bridge, token=None) as client:
        asking = asyncio.create_task(client.call_tool("ask_human", {"title": "Coffee?"}))
        request = await next_request(bridge)
        assert request["created_by"] is None and request["labels"]["mcp_client"] == "mcp"
        await answer(bridge, request["id"], {"value": "yes please"})
        result = await asking
        assert result.structured_content["values"] == {"answer": "yes please"}  # type: ignore[index]
        async with httpx.AsyncClient(base_url=bridge.base_url) as web:
            keys = (await web.get("/.well-known/jwks.json")).json()
        claims = verify_receipt((result.meta or {})["hitl-bridge/receipt"], keys)  # the signed proof rides along
        assert claims["sub"] == request["id"] and claims["values"] == {"answer": "yes please"}
    from bridge.errors import ConfigError
    with pytest.raises(ConfigError, match="add `- type: webhook`"):
        async with running_bridge(tmp_path, {"sources": [{"type": "mcp"}]}):
            pass
    with pytest.raises(ConfigError, match=r"sources\[1\]\.hold"):
        async with running_bridge(tmp_path, {"sources": [{"type": "webhook"}, {"type": "mcp", "hold": "never"}]}):
            pass


async def test_slack_people_edit_then_allow_and_reject_with_a_reason(tmp_path: Path, fake: FakeSlack) -> None:
    config = mcp_config({
        "slack": slack_section(fake),
        "routes": [{"name": "agents", "match": {"engine": "mcp"}, "notify": ["slack:#deploys"],
                    "forbid_self_approval": True}],
    }, edit_arguments=["Bash"], labels={"team": "platform"})
    async with running_bridge(tmp_path, config) as bridge, over_http(bridge) as client, \
            httpx.AsyncClient(timeout=10) as http:
        person = Person(fake, http, f"{bridge.base_url}/slack/events", SIGNING_SECRET)
        prompting = asyncio.create_task(client.call_tool("permission_prompt", {
            "tool_name": "Bash", "input": {"command": "terraform apply", "timeout": 600000}}))
        request = await next_request(bridge)
        asked = await stored(bridge, request["id"])
        assert asked.created_by == "api:agent" and asked.route == "agents"
        assert asked.labels["team"] == "platform" and asked.labels["mcp_tool"] == "Bash"
        # the agent's own token cannot approve what it asked
        refused = await answer(bridge, request["id"], {"values": {"approve": "yes"}}, token=AGENT_TOKEN)
        assert refused.status_code == 403, refused.text

        message = await wait_for(lambda: _message_of(fake, request["id"]), 10)
        await person.click(message, "hitl:open")  # confirm + edit: answered in a modal
        view = await wait_for(lambda: list(fake.views.values())[-1] if fake.views else None, 10)
        edited = {"command": "terraform plan", "timeout": 600000}
        response = await person.submit(view, {"q:approve": "Approve", "q:arguments": json.dumps(edited)})
        assert response.status_code == 200, response.text
        verdict = json.loads(text(await prompting))
        assert verdict == {"behavior": "allow", "updatedInput": edited}

        approving = asyncio.create_task(client.call_tool("request_approval", {
            "tool_name": "deploy", "arguments": {"service": "api"}, "reason": "release 2.3"}))
        request = await next_request(bridge)
        message = await wait_for(lambda: _message_of(fake, request["id"]), 10)
        await person.click(message, "hitl:reject")  # one tap: no edit for this tool
        view = await wait_for(lambda: next((v for v in fake.views.values()
                                            if v.get("callback_id") == "hitl:reject"), None), 10)
        await person.submit(view, {"reason": "freeze until Monday"})
        result = await approving
        assert result.structured_content is not None
        assert result.structured_content["approved"] is False and result.structured_content["via"] == "slack"
        assert result.structured_content["reason"] == "freeze until Monday"
        assert result.structured_content["summary"].startswith("Rejected by ")


def _message_of(fake: FakeSlack, request_id: str) -> dict[str, Any] | None:
    return next((m for m in fake.channel_messages(CHANNEL)
                 if (m.get("metadata") or {}).get("event_payload", {}).get("request_id") == request_id), None)


async def test_a_cancelled_http_call_cancels_its_request(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, mcp_config()) as bridge, over_http(bridge) as client:
        with anyio.CancelScope() as scope:
            async def cancel_once_posted() -> None:
                await next_request(bridge)
                scope.cancel()
            canceller = asyncio.create_task(cancel_once_posted())
            await client.call_tool("request_approval", {"tool_name": "rm", "arguments": {"path": "/"}})
        await canceller
        request = (await bridge.store.list_requests())[0]

        async def closed() -> Any:
            found = await bridge.store.get_request(request.id)
            return found if found is not None and not found.is_open else None
        cancelled = await wait_for(closed, 15)
        assert cancelled.state is RequestState.cancelled and "stopped waiting" in (cancelled.error or "")


async def test_a_restart_loses_nothing_and_tasks_finish_after_it(tmp_path: Path) -> None:
    port = free_port()
    config = mcp_config({"http": {"listen": f"127.0.0.1:{port}"}})
    tasks = TasksClient()
    first = Daemon(make_settings(tmp_path, config))
    await first.start()
    running = True
    try:
        async with over_http(first, extensions=[tasks]) as with_tasks:
            asking = asyncio.create_task(with_tasks.call_tool("ask_human", {"title": "Rotate the keys tonight?"}))
            await wait_for(lambda: tasks.created, 15)
            task_id = tasks.created[0].task_id

            async def shown() -> bool:  # posted in the background once created: waited for
                return bool((await stored(first, task_id)).state is RequestState.posted)
            assert await wait_for(shown, 15)
            asking.cancel()  # the client stops polling; the task (the request) stays
        async with over_http(first) as plain:
            prompting = asyncio.create_task(plain.call_tool("permission_prompt", {
                "tool_name": "Edit", "input": {"file_path": "app.py", "old_string": "a", "new_string": "b"}}))
            second = await wait_for(lambda: _other_open(first, task_id), 15)
            await first.stop()  # with the call waiting
            running = False
            with pytest.raises(Exception):  # noqa: B017 - the connection is gone: any transport error
                await prompting
    finally:
        if running:
            await first.stop()
    async with running_bridge(tmp_path, config) as bridge:
        for request_id in (task_id, second):  # the stop cancelled nothing
            assert (await stored(bridge, request_id)).state is RequestState.posted
        await answer(bridge, task_id, {"value": "yes, at 22:00"})
        await answer(bridge, second, {"value": "yes"})
        async with over_http(bridge, extensions=[TasksClient()]) as client:
            state = await client.session.send_request(GetTask(params=TaskRef(task_id=task_id)), TaskState)
            assert state.status == "completed" and state.result is not None
            assert state.result["structuredContent"]["values"] == {"answer": "yes, at 22:00"}
            result = await client.call_tool("await_answer", {"request_id": second})
            assert json.loads(text(result)) == {"behavior": "allow", "updatedInput": {
                "file_path": "app.py", "old_string": "a", "new_string": "b"}}
            with pytest.raises(Exception, match="no task"):
                await client.session.send_request(GetTask(params=TaskRef(task_id="r_unknown")), TaskState)
        async with over_http(bridge) as without:  # the extension must be declared to use tasks/*
            with pytest.raises(Exception, match="Missing required client capability"):
                await without.session.send_request(GetTask(params=TaskRef(task_id=task_id)), TaskState)


async def _other_open(bridge: Any, task_id: str) -> str | None:
    found = [r.id for r in await bridge.store.list_requests(states=[RequestState.posted]) if r.id != task_id]
    return found[0] if found else None



async def test_hostile_tool_calls_get_clear_errors_and_ask_nobody(tmp_path: Path) -> None:
    config = mcp_config({"http": {"max_body_bytes": 8192}}, edit_arguments=True)
    async with running_bridge(tmp_path, config) as bridge, over_http(bridge) as client:
        deep: dict[str, Any] = {"leaf": 1}
        for _ in range(40):
            deep = {"d": deep}
        verdict = json.loads(text(await client.call_tool("permission_prompt", {"tool_name": "Bash", "input": deep})))
        assert verdict["behavior"] == "deny" and "nested deeper" in verdict["message"]
        with pytest.raises(MCPError):  # over http.max_body_bytes: /mcp refuses the call itself (413)
            await client.call_tool("permission_prompt", {"tool_name": "Write", "input": {"content": "x" * 9000}})
        # fits /mcp, but not the request it becomes (the arguments twice: shown, and pre-filled to edit)
        verdict = json.loads(text(await client.call_tool("permission_prompt", {
            "tool_name": "Write", "input": {"file_path": "big.bin", "content": "x" * 5000}})))
        assert verdict["behavior"] == "deny" and "413" in verdict["message"]
        for arguments, said in [
            ({"title": "Pick", "questions": [{"id": "a", "kind": "choice", "prompt": "Which?"}]},
             "at least one option"),
            ({"title": "Two", "questions": [{"id": "a", "prompt": "A?"}, {"id": "a", "prompt": "B?"}]}, "unique"),
            ({"title": "x" * 501}, "title"),
            ({"title": "Labels", "labels": {"env": {"nested": True}}}, "labels"),
            ({"title": "Wait", "timeout_seconds": -1}, "timeout_seconds"),
            ({"title": "Bad id", "questions": [{"id": "a b", "prompt": "?"}]}, "pattern"),
        ]:
            result = await client.call_tool("ask_human", arguments)
            assert result.is_error and said in text(result), (arguments, text(result))
        bad_tool = await client.call_tool("request_approval", {"tool_name": "t" * 201})
        assert bad_tool.is_error
        unknown = await client.call_tool("no_such_tool", {})
        assert unknown.is_error
        assert await bridge.store.list_requests() == []
        # a request asked another way (even with the same token) is not MCP's to answer
        async with httpx.AsyncClient(base_url=bridge.base_url,
                                     headers={"Authorization": f"Bearer {AGENT_TOKEN}"}) as http:
            made = await http.post("/v1/requests", json={"title": "Deploy?", "questions": [
                {"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]})
        other = await client.call_tool("await_answer", {"request_id": made.json()["id"]})
        assert other.is_error and "asked through MCP" in text(other)


async def test_a_timeout_answer_decides_an_approval_that_offers_an_edit(tmp_path: Path) -> None:
    """`on_timeout: {answer: no}` answers the Approve/Reject and leaves the optional edit of
    the arguments alone (it used to fail the request: "no" is not JSON arguments)."""
    config = mcp_config({"routes": [{"match": {"engine": "mcp"}, "timeout": "200ms",
                                     "on_timeout": {"answer": "no"}}]}, edit_arguments=True)
    async with running_bridge(tmp_path, config) as bridge, over_http(bridge) as client:
        with anyio.fail_after(20):
            result = await client.call_tool("request_approval", {"tool_name": "deploy", "arguments": {"to": "prod"}})
        assert result.structured_content is not None
        assert result.structured_content["approved"] is False and result.structured_content["via"] == "timeout"
        request = (await bridge.store.list_requests())[0]
        assert request.state in (RequestState.expired, RequestState.delivered) and request.answer is not None
        assert request.answer.values["approve"] == "no" and "arguments" not in request.answer.values
