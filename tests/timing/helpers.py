"""Shared helpers for the timing tests: a real daemon on a manual clock, driven step by step."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from bridge.daemon import Daemon
from bridge.models import Event, Request
from tests.harness import ManualClock, running_bridge

CONFIRM = [{"id": "ok", "kind": "confirm", "prompt": "Deploy api v2.3?"}]
#: a token that may answer for others (a chat relay): configs that count votes by the names
#: the API is given include it (`RELAY_TOKENS`); without tokens every API caller is `local`
RELAY = "relay-token-0123456789"
RELAY_TOKENS: dict[str, Any] = {"api_tokens": {"relay": {"token": RELAY, "act_for_others": True}}}
AUTH = {"Authorization": f"Bearer {RELAY}"}


@asynccontextmanager
async def bridge_on(tmp_path: Path, clock: ManualClock, config: dict[str, Any]) -> AsyncIterator[Daemon]:
    """A real daemon (store in tmp_path, HTTP on 127.0.0.1) whose timers follow `clock`."""
    async with running_bridge(tmp_path, config, clock=clock) as daemon:
        await daemon.service.drain()
        yield daemon


async def create(daemon: Daemon, **body: Any) -> str:
    payload: dict[str, Any] = {"title": "Deploy api v2.3", "questions": CONFIRM, **body}
    async with httpx.AsyncClient(base_url=daemon.base_url, headers=AUTH) as client:
        response = await client.post("/v1/requests", json=payload)
    assert response.status_code == 201, response.text
    await daemon.service.drain()
    return str(response.json()["id"])


async def answer(daemon: Daemon, request_id: str, value: Any, who: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=daemon.base_url, headers=AUTH) as client:
        response = await client.post(f"/v1/requests/{request_id}/answer",
                                     json={"value": value, "responder": who})
    await daemon.service.drain()
    return response


async def step(daemon: Daemon, clock: ManualClock, **delta: float) -> int:
    """Move the clock, let the scheduler apply what is due, wait for channel work."""
    clock.advance(**delta)
    fired = await daemon.scheduler.run_due()
    await daemon.service.drain()
    return fired


async def stored(daemon: Daemon, request_id: str) -> Request:
    request = await daemon.store.get_request(request_id)
    assert request is not None
    return request


async def events(daemon: Daemon, request_id: str, kind: str | None = None) -> list[Event]:
    found = await daemon.store.list_events(request_id)
    return [e for e in found if kind is None or e.kind == kind]


async def kinds(daemon: Daemon, request_id: str) -> list[str]:
    return [e.kind for e in await daemon.store.list_events(request_id)]
