"""People approve the OpenAI Agents SDK's tool calls through the bridge.

    from agents import Agent, function_tool
    from hitl_bridge_client import AsyncClient
    from hitl_bridge_client.openai_agents import run_with_approvals

    @function_tool(needs_approval=True)
    def deploy(service: str, version: str) -> str: ...

    result = await run_with_approvals(Agent(name="ops", tools=[deploy]), "ship api 2.3", AsyncClient())

`resolve_approvals(result, bridge)` is the single step: for each approval interruption of a
run it asks the bridge (one request per tool call, all at once, showing the tool, the
agent and the arguments), approves or rejects the call on the run's state, and returns the
state to run again. A rejection tells the model who rejected and why. Each request's
`external_id` comes from the tool call id, so resolving the same interruption again (a
restarted worker with a saved RunState) finds the answer already given.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hitl_bridge_client.aio import AsyncClient
from hitl_bridge_client.answers import Answer, confirm, request_body
from hitl_bridge_client.errors import NoAnswer

try:
    from agents import Agent, Runner, RunResult, RunState, ToolApprovalItem
    from agents.result import RunResultStreaming
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("hitl_bridge_client.openai_agents needs the OpenAI Agents SDK: "
                      "pip install 'hitl-bridge-client[openai-agents]'") from exc

QUESTION = "approve"


def approval_request(item: ToolApprovalItem, *, run_id: str | None = None, **fields: Any) -> dict[str, Any]:
    """The bridge request for one tool call waiting for approval."""
    tool = item.qualified_name or item.name or "tool"
    agent = getattr(item.agent, "name", None)
    try:
        arguments: Any = json.loads(item.arguments or "{}")
    except ValueError:
        arguments = item.arguments
    context = {"arguments": arguments, **fields.pop("context", {})}
    if item.call_id:
        fields.setdefault("external_id", "/".join(p for p in ("openai-agents", run_id, item.call_id) if p))
    title = f"Allow {agent} to call {tool}?" if agent else f"Allow a call to {tool}?"
    return request_body(title, [confirm(QUESTION, f"Run {tool} with these arguments?")], engine="openai-agents",
                        tool=tool, agent=agent, run_id=run_id, context=context, **fields)


def rejection_message(answer: Answer) -> str:
    """What the model reads instead of the tool's output."""
    return f"Rejected by {answer.responder_name}" + (f": {answer.reason}" if answer.reason else ".")


async def decide(bridge: AsyncClient, item: ToolApprovalItem, state: RunState[Any], run_id: str | None,
                 fields: dict[str, Any]) -> bool:
    """Ask about one call and record the decision on `state`; True when approved."""
    try:
        answer = await bridge.wait(await bridge.create(approval_request(item, run_id=run_id, **dict(fields))))
    except NoAnswer as closed:
        state.reject(item, rejection_message=f"Not approved: the approval request {closed.state} without an answer.")
        return False
    if answer.values.get(QUESTION) == "yes":
        state.approve(item)
        return True
    state.reject(item, rejection_message=rejection_message(answer))
    return False


async def resolve_approvals(result: RunResult | RunResultStreaming, bridge: AsyncClient | None = None, *,
                            run_id: str | None = None, **fields: Any) -> RunState[Any]:
    """Ask the bridge about each of `result`'s approval interruptions; the run's state with
    every call approved or rejected, to pass to `Runner.run(agent, state)`. `fields`: any
    field of the bridge request (responders, labels, timeout_s, context...)."""
    if bridge is None:
        async with AsyncClient() as own:
            return await resolve_approvals(result, own, run_id=run_id, **fields)
    state = result.to_state()
    await asyncio.gather(*(decide(bridge, item, state, run_id, fields) for item in result.interruptions))
    return state


async def run_with_approvals(agent: Agent[Any], input: Any, bridge: AsyncClient | None = None, *,
                             run_id: str | None = None, approval: dict[str, Any] | None = None,
                             **run_options: Any) -> RunResult:
    """`Runner.run` until the run ends, answering each round of approvals through the
    bridge. `approval`: fields for the bridge requests; `run_options`: for `Runner.run`."""
    result = await Runner.run(agent, input, **run_options)
    while result.interruptions:
        state = await resolve_approvals(result, bridge, run_id=run_id, **(approval or {}))
        result = await Runner.run(agent, state, **run_options)
    return result
