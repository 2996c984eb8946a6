"""Fixtures: the three fake engines on 127.0.0.1, and bridge config that retries fast."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from bridge.daemon import Daemon
from tests.engines.fake_agentworld import FakeAgentWorld
from tests.engines.fake_mastra import FakeMastra
from tests.engines.fake_teal import FakeTeal

FAST_DELIVERY = {"first_retry": "50ms", "max_backoff": "200ms", "timeout": "3s", "give_up_after": "1h"}


def engine_config(source: dict[str, Any], *, delivery: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"sources": [source], "delivery": {**FAST_DELIVERY, **(delivery or {})}, **extra}


@pytest.fixture
async def teal() -> AsyncIterator[FakeTeal]:
    fake = FakeTeal()
    await fake.server.start()
    yield fake
    await fake.server.stop()


@pytest.fixture
async def mastra() -> AsyncIterator[FakeMastra]:
    fake = FakeMastra()
    await fake.server.start()
    yield fake
    await fake.server.stop()


@pytest.fixture
async def agentworld() -> AsyncIterator[FakeAgentWorld]:
    fake = FakeAgentWorld()
    await fake.server.start()
    yield fake
    await fake.server.stop()


async def get_request(bridge: Daemon, request_id: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=bridge.base_url) as http:
        reply = await http.get(f"/v1/requests/{request_id}")
        reply.raise_for_status()
        body: dict[str, Any] = reply.json()
        return body


async def answer(bridge: Daemon, request_id: str, values: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=bridge.base_url) as http:
        reply = await http.post(f"/v1/requests/{request_id}/answer", json={"values": values, "responder": "ada"})
        assert reply.status_code == 200, reply.text
        body: dict[str, Any] = reply.json()
        return body


async def open_requests(bridge: Daemon, source: str) -> list[Any]:
    from bridge.models import OPEN_STATES

    return await bridge.store.list_requests(states=list(OPEN_STATES), source=source)


async def state_of(bridge: Daemon, request_id: str) -> str:
    found = await bridge.store.get_request(request_id)
    assert found is not None
    return str(found.state)


async def metrics(bridge: Daemon) -> str:
    async with httpx.AsyncClient(base_url=bridge.base_url) as http:
        return (await http.get("/metrics")).text
