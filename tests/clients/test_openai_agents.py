"""The OpenAI Agents SDK (real `openai-agents`, real `openai` client) against a fake
Responses API on 127.0.0.1: tool calls that need approval become bridge requests, and what
people answer approves or rejects them on the run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool
from hitl_bridge_client import AsyncClient
from hitl_bridge_client.openai_agents import resolve_approvals, run_with_approvals
from openai import AsyncOpenAI

from tests.fakes.openai_responses import API_KEY, fake_responses, message, tool_call
from tests.harness import running_bridge, wait_for

NO_TRACING = RunConfig(tracing_disabled=True)


def ops_agent(base_url: str, ran: list[str]) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def deploy(service: str, version: str) -> str:
        """Deploy a service."""
        ran.append(f"deploy {service} {version}")
        return f"deployed {service} {version}"

    @function_tool(needs_approval=True)
    def drop_table(name: str) -> str:
        """Drop a database table."""
        ran.append(f"drop {name}")
        return "dropped"

    model = OpenAIResponsesModel("gpt-test", AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0))
    return Agent(name="ops", instructions="Run operations.", tools=[deploy, drop_table], model=model)


async def open_requests(client: AsyncClient, count: int) -> list[dict[str, Any]]:
    async def found() -> list[dict[str, Any]]:
        rows = await client.list("posted")
        return rows if len(rows) >= count else []
    return sorted(await wait_for(found), key=lambda r: r["tool"])


async def test_people_approve_one_call_and_reject_another(tmp_path: Path) -> None:
    turns = [[tool_call("call_1", "deploy", {"service": "api", "version": "2.3"}),
              tool_call("call_2", "drop_table", {"name": "users"})],
             [message("deployed api; did not drop users")]]
    ran: list[str] = []
    async with fake_responses(turns) as model, running_bridge(tmp_path) as bridge, \
            AsyncClient(bridge.base_url) as client:
        running = asyncio.create_task(run_with_approvals(
            ops_agent(model.base_url, ran), "ship api 2.3 and clean up", client, run_id="run-7",
            approval={"labels": {"team": "ops"}}, run_config=NO_TRACING))
        deploy, drop = await open_requests(client, 2)  # both asked at once
        assert deploy["title"] == "Allow ops to call deploy?"
        assert (deploy["agent"], deploy["engine"]) == ("ops", "openai-agents")
        assert deploy["context"]["arguments"] == {"service": "api", "version": "2.3"}
        assert deploy["external_id"] == "openai-agents/run-7/call_1" and deploy["run_id"] == "run-7"
        assert drop["context"]["arguments"] == {"name": "users"} and drop["labels"] == {"team": "ops"}
        assert ran == []
        await client.answer(drop["id"], "no", responder="bob", reason="not on a Friday")
        await client.answer(deploy["id"], "yes", responder="ana")
        result = await asyncio.wait_for(running, 20)
    assert result.final_output == "deployed api; did not drop users"
    assert ran == ["deploy api 2.3"]
    assert model.outputs_sent_back() == {"call_1": "deployed api 2.3", "call_2": "Rejected by bob: not on a Friday"}


async def test_a_request_closed_without_answer_rejects_and_asking_again_asks_nobody(tmp_path: Path) -> None:
    turns = [[tool_call("call_9", "drop_table", {"name": "audit"})], [message("left it alone")]]
    ran: list[str] = []
    async with fake_responses(turns) as model, running_bridge(tmp_path) as bridge, \
            AsyncClient(bridge.base_url) as client:
        agent = ops_agent(model.base_url, ran)
        result = await Runner.run(agent, "clean up", run_config=NO_TRACING)
        assert [i.name for i in result.interruptions] == ["drop_table"]
        resolving = asyncio.create_task(resolve_approvals(result, client))
        (request,) = await open_requests(client, 1)
        await client.cancel(request["id"], "the run was aborted")
        state = await resolving
        again = await resolve_approvals(result, client)  # a restarted worker: the same external_id
        assert len(await client.list()) == 1
        for resumed in (state, again):
            final = await Runner.run(agent, resumed, run_config=NO_TRACING)
            assert final.final_output == "left it alone"
            assert model.outputs_sent_back() == {
                "call_9": "Not approved: the approval request cancelled without an answer."}
            model.turns.append([message("left it alone")])
    assert ran == []


def test_the_helper_says_what_to_install_when_the_sdk_is_missing() -> None:
    import subprocess
    import sys

    probe = "import sys; sys.modules['agents'] = None; import hitl_bridge_client.openai_agents"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert run.returncode == 1 and "pip install 'hitl-bridge-client[openai-agents]'" in run.stderr
