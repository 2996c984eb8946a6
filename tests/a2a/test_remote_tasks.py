"""The `a2a` source following a remote agent (a real a2a-sdk server) with the real a2a-sdk
client: a task in `input-required` becomes a request; the answer is sent in the same task,
once; a task that stops waiting elsewhere withdraws its request."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)

from bridge.daemon import Daemon
from bridge.models import OPEN_STATES, Responder
from bridge.ports import Outcome
from bridge.store.query import RequestQuery
from tests.a2a.remote_agent import QUESTION, RunningAgent, remote_agent
from tests.harness import running_bridge, wait_for

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def agent() -> AsyncIterator[RunningAgent]:
    async with remote_agent() as running:
        yield running


@pytest.fixture
async def bridge(tmp_path: Path, agent: RunningAgent) -> AsyncIterator[Daemon]:
    source = {"type": "a2a", "poll_every": "0.2s",
              "agents": [{"name": "deployer", "url": agent.url, "endpoint": f"{agent.url}/rpc"}]}
    async with running_bridge(tmp_path, {"sources": [{"type": "webhook"}, source]}) as daemon:
        yield daemon


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


async def start_task(agent: RunningAgent, http: httpx.AsyncClient) -> tuple[Any, str]:
    """A front end's task at the remote agent (it waits for input at once)."""
    card = await A2ACardResolver(http, agent.url).get_agent_card()
    card.supported_interfaces[0].url = f"{agent.url}/rpc"
    client = await create_client(card, ClientConfig(httpx_client=http, streaming=False))
    request = SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text="deploy billing")]),
        configuration=SendMessageConfiguration(return_immediately=True))
    events = [event async for event in client.send_message(request)]
    task_id = next(e.task.id for e in events if e.HasField("task"))
    return client, task_id


async def open_requests(bridge: Daemon) -> list[Any]:
    return await bridge.service.store.find_requests(RequestQuery(states=tuple(OPEN_STATES), source="a2a"))


async def test_the_answer_goes_back_in_the_same_task_once(bridge: Daemon, agent: RunningAgent,
                                                          http: httpx.AsyncClient) -> None:
    client, task_id = await start_task(agent, http)
    [request] = await wait_for(lambda: open_requests(bridge), timeout=20, interval=0.05)
    assert request.title == QUESTION and request.agent == "deployer"
    await bridge.service.answer(request.id, Responder(platform="web", user_id="ana"), {"answer": "staging"}, via="web")

    async def completed() -> Any:
        task = await client.get_task(GetTaskRequest(id=task_id))
        return task if task.status.state == TaskState.TASK_STATE_COMPLETED else None
    task = await wait_for(completed, timeout=20, interval=0.05)
    assert task.artifacts[-1].parts[0].text == "deploying to staging"
    assert agent.executor.replies == ["staging"]
    # the outbox marks it delivered; the task stays completed and the agent heard once
    await wait_for(lambda: _state(bridge, request.id, "delivered"), timeout=20)
    source = next(s for s in bridge.sources if s.name == "a2a")
    fresh = await bridge.service.get(request.id)
    assert fresh is not None
    await source.deliver(Outcome(request=fresh, state="answered", answer=fresh.answer))  # a retry
    assert agent.executor.replies == ["staging"]


async def test_a_task_cancelled_at_the_agent_withdraws_the_request(bridge: Daemon, agent: RunningAgent,
                                                                   http: httpx.AsyncClient) -> None:
    client, task_id = await start_task(agent, http)
    [request] = await wait_for(lambda: open_requests(bridge), timeout=20, interval=0.05)
    await client.cancel_task(CancelTaskRequest(id=task_id))
    await wait_for(lambda: _state(bridge, request.id, "cancelled"), timeout=20)
    assert agent.executor.replies == []


async def _state(bridge: Daemon, request_id: str, state: str) -> bool:
    found = await bridge.service.get(request_id)
    return found is not None and found.state.value == state
