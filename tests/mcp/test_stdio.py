"""`hitl-bridge mcp` as an MCP client starts it: its own process, stdio, the real `mcp` client
library, against a real daemon; a person answers through the API and the web inbox."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.harness import running_bridge, wait_for
from tests.mcp.conftest import (
    AGENT_TOKEN,
    OPS_TOKEN,
    answer,
    free_port,
    mcp_config,
    next_request,
    over_stdio,
    stdio_server,
    stored,
    text,
)
from tests.web.helpers import Person


async def test_every_tool_answered_through_the_api(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, mcp_config()) as bridge, \
            over_stdio(bridge, "--label", "team=payments", "--label", "env=prod") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"ask_human", "request_approval", "permission_prompt", "await_answer"}
        assert set(tools["permission_prompt"].input_schema["required"]) == {"tool_name", "input"}

        asking = asyncio.create_task(client.call_tool("ask_human", {
            "title": "Which region for the canary?", "context": {"service": "api"},
            "labels": {"env": "dev", "mcp_call": "forged"},
            "questions": [{"id": "region", "kind": "choice", "prompt": "Region?", "options": ["eu", "us"]},
                          {"id": "note", "kind": "text", "prompt": "Anything to watch?", "required": False}]}))
        request = await next_request(bridge)
        assert (await answer(bridge, request["id"], {"values": {"region": "us", "note": "latency"},
                                                     "responder": "ana"})).status_code == 200
        result = await asking
        assert not result.is_error
        assert result.structured_content == {
            "request_id": request["id"], "state": "answered", "answered": True,
            "values": {"region": "us", "note": "latency"},
            "answered_by": "ana", "handle": "api:ops", "via": "api", "reason": None,
            "summary": "Answered by ana (through api)."}
        assert json.loads(text(result)) == result.structured_content
        asked = await stored(bridge, request["id"])
        assert asked.engine == "mcp" and asked.created_by == "api:agent" and asked.context == {"service": "api"}
        # the operator's labels win over the agent's; the agent cannot forge where a request came from
        assert asked.labels == {"env": "prod", "team": "payments", "mcp_client": "mcp", "mcp_tool": "ask_human",
                                "mcp_call": "ask_human"}

        approving = asyncio.create_task(client.call_tool("request_approval", {
            "tool_name": "deploy", "arguments": {"service": "api", "version": "2.3"}, "reason": "tests passed"}))
        request = await next_request(bridge)
        assert (request["title"], request["tool"], request["description"]) == ("Allow deploy: api", "deploy",
                                                                              "tests passed")
        assert [q["kind"] for q in request["questions"]] == ["confirm"]  # one tap: no edit unless configured
        await answer(bridge, request["id"], {"value": "yes"})
        result = await approving
        assert result.structured_content is not None
        assert result.structured_content["approved"] is True and result.structured_content["edited"] is False
        assert result.structured_content["arguments"] == {"service": "api", "version": "2.3"}

        approving = asyncio.create_task(client.call_tool("request_approval", {"tool_name": "drop_table",
                                                                              "arguments": {"name": "users"}}))
        request = await next_request(bridge)
        await answer(bridge, request["id"], {"value": "no", "reason": "not on a Friday", "responder": "bo"})
        result = await approving
        assert result.structured_content is not None
        assert result.structured_content["approved"] is False
        assert result.structured_content["reason"] == "not on a Friday"
        assert "arguments" not in result.structured_content
        assert result.structured_content["summary"] == "Rejected by bo (through api): not on a Friday"

        prompting = asyncio.create_task(client.call_tool("permission_prompt", {
            "tool_name": "Bash", "input": {"command": "npm test", "description": "Run the tests"},
            "tool_use_id": "toolu_01"}))
        request = await next_request(bridge)
        assert request["title"] == "Allow Bash: npm test" and request["external_id"] == "mcp:toolu_01"
        await answer(bridge, request["id"], {"value": "yes"})
        assert json.loads(text(await prompting)) == {
            "behavior": "allow", "updatedInput": {"command": "npm test", "description": "Run the tests"}}

        prompting = asyncio.create_task(client.call_tool("permission_prompt", {
            "tool_name": "Bash", "input": {"command": "rm -rf build"}}))
        request = await next_request(bridge)
        await answer(bridge, request["id"], {"value": "no", "reason": "use make clean", "responder": "bo"})
        assert json.loads(text(await prompting)) == {
            "behavior": "deny", "message": "Rejected by bo (through api): use make clean"}

        # a retried permission prompt (same tool use, same input) finds its answer instead of asking again
        again = await client.call_tool("permission_prompt", {
            "tool_name": "Bash", "tool_use_id": "toolu_01",
            "input": {"command": "npm test", "description": "Run the tests"}})
        assert json.loads(text(again))["behavior"] == "allow"
        assert len(await bridge.store.list_requests()) == 5


async def test_the_environment_names_the_bridge_and_a_wrong_token_is_explained(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, mcp_config()) as bridge:
        env = {"HITL_BRIDGE_URL": bridge.base_url, "HITL_BRIDGE_TOKEN": "not-a-token-of-this-bridge"}
        async with over_stdio(bridge, env=env) as client:
            result = await client.call_tool("ask_human", {"title": "Anyone?"})
            assert result.is_error and "401" in text(result) and "HITL_BRIDGE_TOKEN" in text(result)
            denied = await client.call_tool("permission_prompt", {"tool_name": "Bash", "input": {"command": "ls"}})
            verdict = json.loads(text(denied))
            assert verdict["behavior"] == "deny" and "401" in verdict["message"]
        assert await bridge.store.list_requests() == []
        env["HITL_BRIDGE_TOKEN"] = AGENT_TOKEN
        async with over_stdio(bridge, env=env) as client:
            asking = asyncio.create_task(client.call_tool("ask_human", {"title": "Staging DB name?"}))
            request = await next_request(bridge)
            assert request["questions"][0]["kind"] == "text" and request["created_by"] == "api:agent"
            await answer(bridge, request["id"], {"value": "stg-eu-2"})
            assert (await asking).structured_content["values"] == {"answer": "stg-eu-2"}  # type: ignore[index]


async def test_edit_then_allow_and_deny_with_a_reason_in_the_web_inbox(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, mcp_config()) as bridge, \
            over_stdio(bridge, "--edit-arguments", "Bash") as client, Person(bridge.base_url) as person:
        assert (await person.login(OPS_TOKEN)).status_code == 303
        prompting = asyncio.create_task(client.call_tool("permission_prompt", {
            "tool_name": "Bash", "input": {"command": "kubectl delete pod api-0", "timeout": 60}}))
        request = await next_request(bridge)
        edit = next(q for q in request["questions"] if q["kind"] == "edit")
        assert edit["default"] == {"command": "kubectl delete pod api-0", "timeout": 60}  # pre-filled
        page = await person.open(request["id"])
        assert "kubectl delete pod api-0" in page.text
        edited = {"command": "kubectl delete pod api-0 --dry-run=server", "timeout": 60}
        response = await person.submit(f"/inbox/r/{request['id']}/answer",
                                       {"q.approve": "yes", "q.arguments": json.dumps(edited), "q.reason": ""})
        assert response.status_code == 303, response.text
        assert json.loads(text(await prompting)) == {"behavior": "allow", "updatedInput": edited}

        prompting = asyncio.create_task(client.call_tool("permission_prompt", {
            "tool_name": "Bash", "input": {"command": "git push --force"}}))
        request = await next_request(bridge)
        await person.open(request["id"])
        response = await person.submit(f"/inbox/r/{request['id']}/answer", {
            "q.approve": "no", "q.arguments": json.dumps({"command": "git push --force"}),
            "q.reason": "never force-push main"})
        assert response.status_code == 303, response.text
        assert json.loads(text(await prompting)) == {
            "behavior": "deny", "message": "Rejected by ops (through web): never force-push main"}

        # only the tools named get the edit; others stay one tap
        approving = asyncio.create_task(client.call_tool("request_approval", {"tool_name": "Read",
                                                                              "arguments": {"path": "a.txt"}}))
        request = await next_request(bridge)
        assert [q["kind"] for q in request["questions"]] == ["confirm"]
        await answer(bridge, request["id"], {"value": "yes"})
        assert (await approving).structured_content["approved"] is True  # type: ignore[index]


async def test_a_secret_is_refused_with_the_way_to_ask_for_one(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, mcp_config()) as bridge, over_stdio(bridge) as client:
        result = await client.call_tool("ask_human", {"title": "Database password", "questions": [
            {"id": "pw", "kind": "secret", "prompt": "Password for db-prod?"}]})
        assert result.is_error and "callback" in text(result) and "POST /v1/requests" in text(result)
        assert await bridge.store.list_requests() == []


@pytest.mark.parametrize(("flags", "said"), [
    (["--label", "novalue"], "use KEY=VALUE"), (["--label", "mcp_call=x"], "set by the bridge"),
    (["--hold", "soon"], "cannot read 'soon' as a duration"), (["--progress-every", "0s"], "must be positive"),
    (["--url", "ftp://bridge"], "must start with http:// or https://"),
    (["--give-up-after", "never"], "cannot read 'never' as a duration")])
def test_bad_flags_are_refused_with_the_reason(flags: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    from bridge.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["mcp", *flags])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert said in captured.err and captured.out == ""  # stdout is the MCP channel: nothing else goes there


async def test_a_missing_bridge_or_a_wrong_token_is_said_on_stderr(tmp_path: Path) -> None:
    """What an MCP client shows of a server's stderr is all a person has when nothing works."""
    async with running_bridge(tmp_path, mcp_config()) as bridge:
        for url, token, said in [(bridge.base_url, "not-this-bridges-token-00", "401"),
                                 (f"http://127.0.0.1:{free_port()}", AGENT_TOKEN, "no bridge answers at")]:
            log = tmp_path / "stderr.log"
            with log.open("w") as errors:
                params = stdio_server(url, token=token)
                async with Client(stdio_client(params, errlog=errors)) as client:
                    await client.list_tools()  # the server runs even so
                    await wait_for(lambda log=log, said=said: said in log.read_text(), 15)
            hint = "HITL_BRIDGE_TOKEN" if said == "401" else "calls wait for it (--give-up-after)"
            assert hint in log.read_text()


async def test_a_project_with_a_broken_bridge_config_still_gets_the_server(tmp_path: Path) -> None:
    """MCP clients start `hitl-bridge mcp` in the project's folder; a hitl-bridge.yaml there
    (a daemon's config, maybe with unset ${VARIABLES}) is none of its business."""
    (tmp_path / "hitl-bridge.yaml").write_text("slack: {bot_token: '${NOT_SET_ANYWHERE}'}\nnonsense: [\n")
    async with running_bridge(tmp_path, mcp_config()) as bridge, over_stdio(bridge, cwd=str(tmp_path)) as client:
        asking = asyncio.create_task(client.call_tool("ask_human", {"title": "Ready?"}))
        request = await next_request(bridge)
        await answer(bridge, request["id"], {"value": "ready"})
        assert (await asking).structured_content["values"] == {"answer": "ready"}  # type: ignore[index]
