"""End to end: a real Temporal dev server, a real worker running workflows that ask through
`hitl_bridge_client.temporal`, and a real daemon with a `temporal` source. Each workflow gets
its answer exactly once; one that ends first withdraws its request."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hitl_bridge_client import AsyncClient
from hitl_bridge_client.temporal import BridgeActivities
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from bridge.daemon import Daemon
from tests.harness import running_bridge, wait_for
from tests.temporal.conftest import TemporalDevServer, temporal_binary
from tests.temporal.workflows import DeployWorkflow, SignalledWorkflow

pytestmark = pytest.mark.timeout(120)
TOKEN = "temporal-worker-token"


@pytest.fixture
async def bridge(tmp_path: Path, temporal_server: TemporalDevServer) -> AsyncIterator[Daemon]:
    config = {"http": {"api_tokens": {"worker": TOKEN}},
              "sources": [{"type": "webhook"},
                          {"type": "temporal", "address": temporal_server.address, "watch_every": "1s"}]}
    async with running_bridge(tmp_path, config) as daemon:
        yield daemon


@pytest.fixture
async def api(bridge: Daemon) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(bridge.base_url, token=TOKEN) as client:
        yield client


@pytest.fixture
async def temporal(temporal_server: TemporalDevServer) -> Client:
    return await Client.connect(temporal_server.address)


@pytest.fixture
async def worker(temporal: Client, api: AsyncClient) -> AsyncIterator[str]:
    queue = f"hitl-{uuid.uuid4().hex[:8]}"
    activities = BridgeActivities(api)
    async with Worker(temporal, task_queue=queue, workflows=[DeployWorkflow, SignalledWorkflow],
                      activities=[activities.create_request]):
        yield queue


async def open_request(api: AsyncClient, workflow_id: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        views = await api.list(["pending", "posted"], source="temporal")
        return next((v for v in views if v.get("run_id") == workflow_id), None)
    result: dict[str, Any] = await wait_for(found, timeout=30, interval=0.1)
    return result


async def count_events(handle: WorkflowHandle[Any, Any], kind: int) -> int:
    return len([event async for event in handle.fetch_history_events() if event.event_type == kind])


async def test_answer_reaches_the_workflow_once_as_an_update(
        temporal: Client, worker: str, api: AsyncClient, bridge: Daemon) -> None:
    workflow_id = f"deploy-{uuid.uuid4().hex[:8]}"
    handle = await temporal.start_workflow(DeployWorkflow.run, "billing", id=workflow_id, task_queue=worker)
    view = await open_request(api, workflow_id)
    assert view["title"] == "Deploy billing?"
    assert view["context"]["temporal"]["workflow_id"] == workflow_id
    assert view["created_by"] == "api:worker"

    await api.answer(view["id"], "yes")
    result = await handle.result()
    assert result == {"ok": "yes", "by": "api:worker", "outcomes": 1}
    assert await count_events(handle, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) == 1
    assert await count_events(handle, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) == 1
    await wait_for(lambda: _state(api, view["id"], "delivered"), timeout=30, interval=0.1)


async def test_answer_by_signal(temporal: Client, worker: str, api: AsyncClient) -> None:
    workflow_id = f"signalled-{uuid.uuid4().hex[:8]}"
    handle = await temporal.start_workflow(SignalledWorkflow.run, "search", id=workflow_id, task_queue=worker)
    view = await open_request(api, workflow_id)
    await api.answer(view["id"], "no")
    assert await handle.result() == {"ok": "no"}
    assert await count_events(handle, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) == 1


async def test_terminated_workflow_withdraws_its_request(temporal: Client, worker: str, api: AsyncClient) -> None:
    workflow_id = f"ended-{uuid.uuid4().hex[:8]}"
    handle = await temporal.start_workflow(DeployWorkflow.run, "ledger", id=workflow_id, task_queue=worker)
    view = await open_request(api, workflow_id)
    await handle.terminate("finished elsewhere")
    await wait_for(lambda: _state(api, view["id"], "cancelled"), timeout=30, interval=0.1)
    events = await api.events(view["id"])
    assert any("terminated" in str(e) for e in events)


async def test_cancel_in_the_bridge_ends_the_wait(temporal: Client, worker: str, api: AsyncClient) -> None:
    workflow_id = f"cancelled-{uuid.uuid4().hex[:8]}"
    handle = await temporal.start_workflow(DeployWorkflow.run, "auth", id=workflow_id, task_queue=worker)
    view = await open_request(api, workflow_id)
    await api.cancel(view["id"], "not today")
    assert await handle.result() == {"closed": "cancelled"}


async def _state(api: AsyncClient, request_id: str, state: str) -> bool:
    return (await api.get(request_id)).get("state") == state


async def test_a_reset_withdraws_the_old_runs_request_and_the_new_run_asks_again(
        temporal: Client, worker: str, api: AsyncClient, temporal_server: TemporalDevServer) -> None:
    workflow_id = f"reset-{uuid.uuid4().hex[:8]}"
    handle = await temporal.start_workflow(DeployWorkflow.run, "search", id=workflow_id, task_queue=worker)
    first = await open_request(api, workflow_id)
    binary = temporal_binary()
    assert binary is not None
    reset = await asyncio.create_subprocess_exec(
        binary, "workflow", "reset", "--address", temporal_server.address, "--workflow-id", workflow_id,
        "--type", "FirstWorkflowTask", "--reason", "test reset",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output, _ = await reset.communicate()
    assert reset.returncode == 0, output.decode()
    await wait_for(lambda: _state(api, first["id"], "cancelled"), timeout=30, interval=0.1)

    async def second() -> dict[str, Any] | None:
        views = await api.list(["pending", "posted"], source="temporal")
        return next((v for v in views if v.get("run_id") == workflow_id and v["id"] != first["id"]), None)
    again = await wait_for(second, timeout=30, interval=0.1)
    await api.answer(again["id"], "yes")
    latest = temporal.get_workflow_handle(workflow_id)
    assert (await latest.result())["ok"] == "yes"
    assert handle.run_id != (await latest.describe()).run_id
