"""An A2A task outlives the daemon that took it: kept in the bridge's store, it is read after
a restart, and when its request closes with no executor left, the delivery finishes it once
(artifact, push notification) — driven by the real `a2a-sdk` client on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import GetTaskRequest, ListTasksRequest, TaskState

from adapters.a2a.server import A2aSource
from bridge.daemon import Daemon
from tests.a2a.test_people_agent import TOKEN, _configured, _person, collect, open_request, people
from tests.harness import callback_receiver, make_settings, running_bridge, wait_for

pytestmark = pytest.mark.timeout(90)
CONFIG = {"http": {"api_tokens": {"planner": TOKEN}}, "sources": [{"type": "webhook"}, {"type": "a2a"}]}


def _a2a(bridge: Daemon) -> A2aSource:
    found = next(s for s in bridge.sources if s.name == "a2a")
    assert isinstance(found, A2aSource)
    return found


async def _task(bridge: Daemon, http: httpx.AsyncClient, task_id: str) -> Any:
    client = await people(bridge, http, streaming=False)
    return await client.get_task(GetTaskRequest(id=task_id))


async def test_a_task_taken_before_a_restart_is_finished_after_it(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, CONFIG)
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=30) as http, \
            callback_receiver() as receiver:
        async with running_bridge(tmp_path, settings=settings) as first:
            client = await people(first, http, streaming=False)
            await collect(client, _configured("Roll the canary to 50 %?", receiver.url))
            request = await open_request(first)
            task_id = str(request.external_id).removeprefix("a2a:")
            assert (await _task(first, http, task_id)).status.state == TaskState.TASK_STATE_WORKING
        async with running_bridge(tmp_path, settings=make_settings(tmp_path, CONFIG)) as second:
            kept = await _task(second, http, task_id)
            assert kept.status.state == TaskState.TASK_STATE_WORKING  # read back from the store
            listed = await (await people(second, http, streaming=False)).list_tasks(ListTasksRequest())
            assert task_id in [t.id for t in listed.tasks]
            await second.service.answer(request.id, _person(), {"answer": "go"}, via="web")

            async def done() -> Any:
                task = await _task(second, http, task_id)
                return task if task.status.state == TaskState.TASK_STATE_COMPLETED else None

            final = await wait_for(done, timeout=20, interval=0.05)
            assert [p.text for p in final.artifacts[0].parts if p.text] == ["go"]
            assert final.artifacts[0].metadata["request_id"] == request.id
            pushed = await wait_for(lambda: [r for r in receiver.received if b"go" in r.body], timeout=20)
            assert pushed[0].headers.get("x-a2a-notification-token") == "push-check-token"
            body = json.loads(pushed[0].body)
            assert "COMPLETED" in json.dumps(body)
            # a second delivery of the same outcome (a retry) changes nothing and pushes nothing
            source = _a2a(second)
            closed = await second.service.get(request.id)
            assert closed is not None
            await source.finish(task_id, closed)
            assert len([r for r in receiver.received if b"go" in r.body]) == 1
            assert len((await _task(second, http, task_id)).artifacts) == 1


async def test_a_task_finished_by_its_running_executor_is_not_finished_twice(tmp_path: Path) -> None:
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=30) as http, \
            callback_receiver() as receiver, running_bridge(tmp_path, CONFIG) as bridge:
        client = await people(bridge, http, streaming=False)
        await collect(client, _configured("Ship it?", receiver.url))
        request = await open_request(bridge)
        task_id = str(request.external_id).removeprefix("a2a:")
        await bridge.service.answer(request.id, _person(), {"answer": "shipped"}, via="web")

        async def done() -> Any:
            task = await _task(bridge, http, task_id)
            return task if task.status.state == TaskState.TASK_STATE_COMPLETED else None

        final = await wait_for(done, timeout=20, interval=0.05)
        assert len(final.artifacts) == 1
        source = _a2a(bridge)
        closed = await bridge.service.get(request.id)
        assert closed is not None
        await source.finish(task_id, closed)  # a late delivery
        assert len((await _task(bridge, http, task_id)).artifacts) == 1
