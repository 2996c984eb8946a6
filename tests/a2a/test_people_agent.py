"""The bridge as an A2A agent, driven by the real `a2a-sdk` client over HTTP on 127.0.0.1:
a message asks a person, the task completes with the answer as its artifact, exactly once."""

from __future__ import annotations

import asyncio
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
    TaskPushNotificationConfig,
    TaskState,
)
from google.protobuf.json_format import ParseDict

from bridge.daemon import Daemon
from bridge.models import OPEN_STATES, Responder
from bridge.store.query import RequestQuery
from tests.harness import callback_receiver, running_bridge, wait_for

pytestmark = pytest.mark.timeout(60)
TOKEN = "a2a-caller-token-0123"


@pytest.fixture
async def bridge(tmp_path: Path) -> AsyncIterator[Daemon]:
    config = {"http": {"api_tokens": {"planner": TOKEN}}, "sources": [{"type": "webhook"}, {"type": "a2a"}]}
    async with running_bridge(tmp_path, config) as daemon:
        yield daemon


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
        yield client


async def people(bridge: Daemon, http: httpx.AsyncClient, *, streaming: bool) -> Any:
    card = await A2ACardResolver(http, bridge.base_url).get_agent_card()
    assert [s.id for s in card.skills] == ["ask", "approve"]
    card.supported_interfaces[0].url = f"{bridge.base_url}/a2a"  # listening on port 0
    return await create_client(card, ClientConfig(httpx_client=http, streaming=streaming))


def message(text: str, **metadata: str) -> SendMessageRequest:
    return SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex,
                                              parts=[Part(text=text)], metadata=metadata or None))


async def open_request(bridge: Daemon) -> Any:
    async def found() -> Any:
        page = await bridge.service.store.find_requests(_query())
        return page[0] if page else None
    return await wait_for(found, timeout=20, interval=0.05)


def _query() -> Any:
    return RequestQuery(states=tuple(OPEN_STATES), source="a2a")


async def collect(client: Any, request: SendMessageRequest) -> list[Any]:
    return [event async for event in client.send_message(request)]


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_message_completes_with_the_persons_answer(bridge: Daemon, http: httpx.AsyncClient,
                                                           streaming: bool) -> None:
    client = await people(bridge, http, streaming=streaming)
    sending = asyncio.create_task(collect(client, message("Which region should the canary use?")))
    request = await open_request(bridge)
    assert request.title == "Which region should the canary use?"
    assert request.created_by == "api:planner"
    await bridge.service.answer(request.id, _person(), {"answer": "eu-west-1"}, via="web")
    events = await asyncio.wait_for(sending, 20)
    tasks = [e.task for e in events if e.HasField("task")]
    final = tasks[-1] if tasks else None
    if final is None or final.status.state != TaskState.TASK_STATE_COMPLETED:
        task_id = next(e.status_update.task_id for e in events if e.HasField("status_update"))
        final = await client.get_task(GetTaskRequest(id=task_id))
    assert final.status.state == TaskState.TASK_STATE_COMPLETED
    assert len(final.artifacts) == 1
    assert final.artifacts[0].parts[0].text == "eu-west-1"


async def test_refused_without_the_token(bridge: Daemon) -> None:
    async with httpx.AsyncClient() as anonymous:
        card = await anonymous.get(f"{bridge.base_url}/.well-known/agent-card.json")
        assert card.status_code == 200
        reply = await anonymous.post(f"{bridge.base_url}/a2a", json={"jsonrpc": "2.0", "id": 1,
                                     "method": "SendMessage", "params": {}})
        assert reply.status_code == 401


def _person() -> Any:
    return Responder(platform="web", user_id="ana", name="Ana")


def _configured(text: str, push_url: str) -> SendMessageRequest:
    request = message(text)
    request.configuration.CopyFrom(SendMessageConfiguration(
        return_immediately=True,
        task_push_notification_config=TaskPushNotificationConfig(url=push_url, token="push-check-token")))
    return request


async def test_push_notifications_carry_the_outcome(bridge: Daemon, http: httpx.AsyncClient) -> None:
    client = await people(bridge, http, streaming=False)
    async with callback_receiver() as receiver:
        events = await collect(client, _configured("Ship the release notes?", receiver.url))
        assert events, "return_immediately answers with the task"
        request = await open_request(bridge)
        await bridge.service.answer(request.id, _person(), {"answer": "ship them"}, via="web")
        await wait_for(lambda: any(b"ship them" in r.body for r in receiver.received), timeout=20)
    pushed = next(r for r in receiver.received if b"ship them" in r.body)
    assert pushed.headers.get("x-a2a-notification-token") == "push-check-token"


async def test_a_task_cancelled_by_the_caller_withdraws_the_request(bridge: Daemon, http: httpx.AsyncClient) -> None:
    client = await people(bridge, http, streaming=False)
    sending = asyncio.create_task(collect(client, message("Rotate the keys now?")))
    request = await open_request(bridge)
    task_id = str(request.external_id).removeprefix("a2a:")
    await client.cancel_task(CancelTaskRequest(id=task_id))
    await wait_for(lambda: _closed(bridge, request.id, "cancelled"), timeout=20)
    sending.cancel()
    task = await client.get_task(GetTaskRequest(id=task_id))
    assert task.status.state == TaskState.TASK_STATE_CANCELED


async def test_a_request_cancelled_in_the_bridge_cancels_the_task(bridge: Daemon, http: httpx.AsyncClient) -> None:
    client = await people(bridge, http, streaming=True)
    sending = asyncio.create_task(collect(client, message("Drop the staging database?")))
    request = await open_request(bridge)
    await bridge.service.cancel(request.id, actor="api:ops", reason="not needed")
    events = await asyncio.wait_for(sending, 20)
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    assert states[-1] == TaskState.TASK_STATE_CANCELED


@pytest.mark.parametrize(("parts", "says"), [
    ([{"text": "   "}], "nothing to ask"),
    ([{"data": {"title": "Key?", "questions": [{"id": "k", "kind": "secret", "prompt": "Key?"}]}}], "secret"),
    ([{"data": {"title": "", "questions": []}}], "refused"),
])
async def test_messages_that_cannot_be_asked_are_rejected(bridge: Daemon, http: httpx.AsyncClient,
                                                          parts: list[dict[str, Any]], says: str) -> None:
    client = await people(bridge, http, streaming=True)
    request = message("x")
    del request.message.parts[:]
    for part in parts:
        request.message.parts.append(ParseDict(part, Part()))
    events = await collect(client, request)
    updates = [e.status_update for e in events if e.HasField("status_update")]
    assert updates[-1].status.state == TaskState.TASK_STATE_REJECTED
    assert says in updates[-1].status.message.parts[0].text
    assert await bridge.service.store.find_requests(_query()) == []


async def _closed(bridge: Daemon, request_id: str, state: str) -> bool:
    found = await bridge.service.get(request_id)
    return found is not None and found.state.value == state
