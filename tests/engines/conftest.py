"""Fixtures: the real Mastra server and the fake Teal and agent-world engines on 127.0.0.1,
and bridge config that retries fast."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from bridge.daemon import Daemon
from tests.engines.fake_agentworld import FakeAgentWorld
from tests.engines.fake_teal import FakeTeal
from tests.engines.mastra_engine import MastraEngine
from tests.engines.mastra_server import BuildFailed, MastraServer, NodeMissing, prepare

FAST_DELIVERY = {"first_retry": "50ms", "max_backoff": "200ms", "timeout": "3s", "give_up_after": "1h"}


def engine_config(source: dict[str, Any], *, delivery: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"sources": [source], "delivery": {**FAST_DELIVERY, **(delivery or {})}, **extra}


@pytest.fixture
async def teal() -> AsyncIterator[FakeTeal]:
    fake = FakeTeal()
    await fake.server.start()
    yield fake
    await fake.server.stop()


@pytest.fixture(scope="session")
def mastra_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MastraServer]:
    """One real Mastra server for the whole run (built on first use, see mastra_server.py)."""
    try:
        entry, _ = prepare()
    except NodeMissing as exc:
        pytest.skip(f"Mastra tests skipped: {exc}")
    except BuildFailed as exc:
        pytest.fail(f"cannot build the Mastra test app: {exc}", pytrace=False)
    server = MastraServer(entry, tmp_path_factory.mktemp("mastra") / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def mastra(mastra_server: MastraServer) -> AsyncIterator[MastraEngine]:
    """The real Mastra server behind a fault-injecting proxy; every run is deleted afterwards."""
    engine = MastraEngine(mastra_server.url)
    await engine.server.start()
    try:
        yield engine
    finally:
        await engine.close()
        async with httpx.AsyncClient(base_url=mastra_server.url, timeout=30) as direct:
            await MastraEngine.clear_with(direct)


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


async def answer(bridge: Daemon, request_id: str, values: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
    body = {"values": values, "responder": "ada", **({"reason": reason} if reason else {})}
    async with httpx.AsyncClient(base_url=bridge.base_url) as http:
        reply = await http.post(f"/v1/requests/{request_id}/answer", json=body)
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
