"""End to end: a front end's run goes through the bridge to a real AG-UI server
(ag-ui-langgraph over LangGraph); the interrupt is asked of a person, and the answer
resumes the run exactly once. A run made past the person (the front end answered) withdraws
the request."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.daemon import Daemon
from bridge.models import OPEN_STATES, Responder
from bridge.store.query import RequestQuery
from tests.agui.agent import QUESTION, RunningAgent, agui_agent
from tests.harness import running_bridge, wait_for

pytestmark = pytest.mark.timeout(60)
TOKEN = "agui-front-end-token"


@pytest.fixture
async def agent() -> AsyncIterator[RunningAgent]:
    async with agui_agent() as running:
        yield running


@pytest.fixture
async def bridge(tmp_path: Path, agent: RunningAgent) -> AsyncIterator[Daemon]:
    config = {"http": {"api_tokens": {"ui": TOKEN}},
              "sources": [{"type": "webhook"}, {"type": "agui", "url": agent.url}]}
    async with running_bridge(tmp_path, config) as daemon:
        yield daemon


async def run_through(bridge: Daemon, body: dict[str, Any]) -> list[dict[str, Any]]:
    events = []
    async with httpx.AsyncClient(timeout=30) as http:
        async with http.stream("POST", f"{bridge.base_url}/v1/agui/agui/runs", json=body,
                               headers={"authorization": f"Bearer {TOKEN}", "accept": "text/event-stream"}) as reply:
            assert reply.status_code == 200, await reply.aread()
            async for line in reply.aiter_lines():
                if line.startswith("data:"):
                    events.append(json.loads(line[5:]))
    return events


def first_run(thread_id: str) -> dict[str, Any]:
    return {"threadId": thread_id, "runId": uuid.uuid4().hex, "messages": [
        {"id": uuid.uuid4().hex, "role": "user", "content": "deploy billing"}], "state": {}, "tools": [],
        "context": [], "forwardedProps": {}}


async def open_requests(bridge: Daemon) -> list[Any]:
    return await bridge.service.store.find_requests(RequestQuery(states=tuple(OPEN_STATES), source="agui"))


async def test_the_interrupt_is_asked_and_the_answer_resumes_once(bridge: Daemon, agent: RunningAgent) -> None:
    thread_id = uuid.uuid4().hex
    events = await run_through(bridge, first_run(thread_id))
    finished = [e for e in events if e["type"] == "RUN_FINISHED"]
    assert finished[-1]["outcome"]["type"] == "interrupt"  # the front end saw the stream unchanged
    [request] = await open_requests(bridge)
    assert request.title == QUESTION and request.questions[0].kind.value == "confirm"
    assert request.created_by == "api:ui"

    await bridge.service.answer(request.id, Responder(platform="web", user_id="ana"), {"answer": "yes"}, via="web")
    await wait_for(lambda: agent.deployer.acted, timeout=20)
    await wait_for(lambda: _state(bridge, request.id, "delivered"), timeout=20)
    assert agent.deployer.acted == ["deployed"]


async def test_a_run_answered_in_the_front_end_withdraws_the_request(bridge: Daemon, agent: RunningAgent) -> None:
    thread_id = uuid.uuid4().hex
    events = await run_through(bridge, first_run(thread_id))
    interrupt_id = next(e for e in events if e["type"] == "RUN_FINISHED")["outcome"]["interrupts"][0]["id"]
    [request] = await open_requests(bridge)
    resumed = {"threadId": thread_id, "runId": uuid.uuid4().hex, "messages": [], "state": {}, "tools": [],
               "context": [], "forwardedProps": {},
               "resume": [{"interruptId": interrupt_id, "status": "resolved", "payload": False}]}
    await run_through(bridge, resumed)
    await wait_for(lambda: _state(bridge, request.id, "cancelled"), timeout=20)
    assert agent.deployer.acted == ["held back"]


@pytest.mark.parametrize(("body", "status"), [
    (b"[]", 422), (b'{"threadId": 1}', 422), (b"{", 422),
])
async def test_bad_runs_are_refused(bridge: Daemon, body: bytes, status: int) -> None:
    async with httpx.AsyncClient() as http:
        reply = await http.post(f"{bridge.base_url}/v1/agui/agui/runs", content=body,
                                headers={"authorization": f"Bearer {TOKEN}", "content-type": "application/json"})
        assert reply.status_code == status
        wrong = await http.post(f"{bridge.base_url}/v1/agui/agui/runs", json=first_run("t"),
                                headers={"authorization": "Bearer nope"})
        assert wrong.status_code == 401


async def _state(bridge: Daemon, request_id: str, state: str) -> bool:
    found = await bridge.service.get(request_id)
    return found is not None and found.state.value == state


async def test_an_answer_given_after_a_restart_still_resumes(tmp_path: Path, agent: RunningAgent) -> None:
    config = {"http": {"api_tokens": {"ui": TOKEN}},
              "sources": [{"type": "webhook"}, {"type": "agui", "url": agent.url}]}
    thread_id = uuid.uuid4().hex
    async with running_bridge(tmp_path, config) as first:
        await run_through(first, first_run(thread_id))
        [request] = await open_requests(first)
    async with running_bridge(tmp_path, config) as second:
        await second.service.answer(request.id, Responder(platform="web", user_id="bo"), {"answer": "no"}, via="web")
        await wait_for(lambda: _state(second, request.id, "delivered"), timeout=20)
    assert agent.deployer.acted == ["held back"]
