"""The gateway in front of `@modelcontextprotocol/server-filesystem` (from the npm
registry), served by a real daemon at `/mcp/<name>`, with the real `mcp` client as the
agent: reads allowed by a rule, a write asked and approved in the Slack fake (with edited
arguments), another denied with a reason the agent receives, a call cancelled mid-wait."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from bridge.models import RequestState
from tests.fakes.slack_api import FakeSlack
from tests.gateway.conftest import (
    AGENT_TOKEN,
    agent,
    answer,
    filesystem_server,
    gateway_config,
    node_servers,
    posted,
)
from tests.harness import running_bridge, wait_for
from tests.slack.conftest import CHANNEL, SIGNING_SECRET, slack_section
from tests.slack.person import Person

READS = {"name": "reads", "source": "tools", "annotations": {"readOnlyHint": True}, "effect": "allow"}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    node_servers()
    root = tmp_path / "files"
    root.mkdir()
    (root / "notes.txt").write_text("hello from the files")
    return root


@pytest.fixture
async def fake() -> Any:
    async with FakeSlack() as server:
        yield server


def _message_of(fake: FakeSlack, request_id: str) -> dict[str, Any] | None:
    return next((m for m in fake.channel_messages(CHANNEL)
                 if (m.get("metadata") or {}).get("event_payload", {}).get("request_id") == request_id), None)


async def test_reads_are_allowed_by_a_rule_and_the_result_comes_back_unchanged(tmp_path: Path, files: Path) -> None:
    config = gateway_config(filesystem_server(files), extra={"policies": [READS]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed["read_text_file"].annotations is not None
        assert listed["read_text_file"].annotations.read_only_hint is True  # listed through as the server says
        result = await client.call_tool("read_text_file", {"path": str(files / "notes.txt")})
        assert not result.is_error and result.content[0].type == "text"
        assert result.content[0].text == "hello from the files"
        assert result.structured_content == {"content": "hello from the files"}
        [request] = await bridge.store.list_requests()
        assert request.state in (RequestState.answered, RequestState.delivered) and request.answer is not None
        assert f"{request.answer.responder.platform}:{request.answer.responder.user_id}" == "policy:reads", \
            request.answer
        assert request.engine == "mcp-gateway" and request.tool == "read_text_file"
        assert request.annotations["readOnlyHint"] is True and request.labels["mcp_server"] == "fs"
        assert request.context == {"path": str(files / "notes.txt")} and request.session
        assert request.created_by == "api:agent" and request.source == "tools"


async def test_a_write_is_asked_in_slack_and_approved_with_edited_arguments(
        tmp_path: Path, files: Path, fake: FakeSlack) -> None:
    config = gateway_config(filesystem_server(files), extra={
        "policies": [READS], "slack": slack_section(fake),
        "routes": [{"name": "writes", "match": {"engine": "mcp-gateway"}, "notify": ["slack:#deploys"]}]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client, \
            httpx.AsyncClient(timeout=10) as http:
        person = Person(fake, http, f"{bridge.base_url}/slack/events", SIGNING_SECRET)
        asked = {"path": str(files / "draft.txt"), "content": "rm -rf everything"}
        writing = asyncio.create_task(client.call_tool("write_file", asked))
        [request] = await posted(bridge)
        assert request["tool"] == "write_file" and request["annotations"]["destructiveHint"] is True
        assert "Server `fs`, tool `write_file`" in request["description"]
        message = await wait_for(lambda: _message_of(fake, request["id"]), 10)
        await person.click(message, "hitl:open")
        view = await wait_for(lambda: list(fake.views.values())[-1] if fake.views else None, 10)
        edited = {"path": str(files / "draft.txt"), "content": "a kind note"}
        response = await person.submit(view, {"q:approve": "Approve", "q:arguments": json.dumps(edited)})
        assert response.status_code == 200, response.text
        result = await writing
        assert not result.is_error, result
        assert (files / "draft.txt").read_text() == "a kind note"  # the person's arguments, not the agent's


async def test_a_denied_write_is_a_tool_error_with_the_reason_and_nothing_is_written(
        tmp_path: Path, files: Path) -> None:
    no_moves = {"name": "no-moves", "source": "tools", "tool": "move_file", "effect": "deny",
                "reason": "files stay where they are"}
    config = gateway_config(filesystem_server(files), extra={"policies": [READS, no_moves]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        writing = asyncio.create_task(client.call_tool("write_file", {"path": str(files / "x.txt"), "content": "x"}))
        [request] = await posted(bridge)
        assert (await answer(bridge, request["id"], {"approve": "no", "reason": "not in the release"})).is_success
        result = await writing
        assert result.is_error and "not in the release" in result.content[0].text  # type: ignore[union-attr]
        assert not (files / "x.txt").exists()
        moved = await client.call_tool("move_file", {"source": str(files / "notes.txt"),
                                                     "destination": str(files / "moved.txt")})
        assert moved.is_error and "files stay where they are" in moved.content[0].text  # type: ignore[union-attr]
        assert (files / "notes.txt").exists()


async def test_a_held_call_sends_progress_while_it_waits(tmp_path: Path, files: Path) -> None:
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    config = gateway_config(filesystem_server(files), progress_every="50ms")
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        writing = asyncio.create_task(client.call_tool("write_file", {"path": str(files / "p.txt"), "content": "p"},
                                                       progress_callback=on_progress))
        [request] = await posted(bridge)
        await wait_for(lambda: len(seen) >= 2, 15)  # clients that reset their timeout on progress keep waiting
        assert request["id"] in seen[0] and "waiting for a person" in seen[0]
        await answer(bridge, request["id"], {"approve": "yes"})
        assert not (await writing).is_error and (files / "p.txt").read_text() == "p"


async def test_a_call_cancelled_mid_wait_cancels_its_request(tmp_path: Path, files: Path) -> None:
    async with running_bridge(tmp_path, gateway_config(filesystem_server(files))) as bridge, agent(bridge) as client:
        with anyio.CancelScope() as scope:
            async def cancel_once_posted() -> None:
                await posted(bridge)
                scope.cancel()
            canceller = asyncio.create_task(cancel_once_posted())
            await client.call_tool("write_file", {"path": str(files / "y.txt"), "content": "y"})
        await canceller
        [request] = await bridge.store.list_requests()

        async def closed() -> Any:
            found = await bridge.store.get_request(request.id)
            return found if found is not None and not found.is_open else None
        cancelled = await wait_for(closed, 15)
        assert cancelled.state is RequestState.cancelled and "stopped waiting" in (cancelled.error or "")
        assert not (files / "y.txt").exists()


async def test_the_gateway_is_behind_the_token_and_the_host_and_origin_checks(tmp_path: Path, files: Path) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with running_bridge(tmp_path, gateway_config(filesystem_server(files))) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as http:
        assert (await http.post("/mcp/tools", json=init, headers=headers)).status_code == 401
        bad = await http.post("/mcp/tools", json=init, headers={**headers, "Authorization": "Bearer nope-0123456789"})
        assert bad.status_code == 401
        mine = {**headers, "Authorization": f"Bearer {AGENT_TOKEN}"}
        assert (await http.post("/mcp/tools", json=init, headers={**mine, "Origin": "http://evil.example"})
                ).status_code == 403
        assert (await http.post("/mcp/tools", json=init, headers={**mine, "Host": "evil.example"})).status_code == 400
        assert (await http.post("/mcp/nope", json=init, headers=mine)).status_code == 404
        assert (await http.post("/mcp/tools", json=init, headers=mine)).status_code == 200
