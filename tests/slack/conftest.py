"""Fixtures: the fake Slack API, a real bridge daemon with the Slack channel, a person."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.daemon import Daemon
from bridge.models import Request
from tests.fakes.slack_api import FakeSlack
from tests.harness import running_bridge, wait_for
from tests.slack.person import Person

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0DEPLOYS"


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as server:
        yield server


def slack_section(fake: FakeSlack, **extra: Any) -> dict[str, Any]:
    return {"bot_token": fake.bot_token, "signing_secret": SIGNING_SECRET,
            "api_url": fake.api_url, "post_interval_s": 0, "backoff_s": 0.01, **extra}


@dataclass
class SlackBridge:
    daemon: Daemon
    fake: FakeSlack
    http: httpx.AsyncClient
    person: Person

    async def create(self, body: dict[str, Any]) -> str:
        response = await self.http.post(f"{self.daemon.base_url}/v1/requests", json=body)
        assert response.status_code in (200, 201), response.text
        return str(response.json()["id"])

    async def stored(self, request_id: str) -> Request:
        request = await self.daemon.store.get_request(request_id)
        assert request is not None
        return request

    async def message_of(self, request_id: str, channel: str = CHANNEL) -> dict[str, Any]:
        """The message posted for `request_id` in `channel` (waits for it)."""
        def find() -> dict[str, Any] | None:
            return next((m for m in self.fake.channel_messages(channel)
                         if (m.get("metadata") or {}).get("event_payload", {})
                         .get("request_id") == request_id), None)
        found: dict[str, Any] = await wait_for(find, 5)
        return copy.deepcopy(found)  # what the person saw, not the live (updated) message

    async def closed(self, request_id: str) -> Request:
        async def done() -> Request | None:
            request = await self.stored(request_id)
            return None if request.is_open else request
        result: Request = await wait_for(done, 5)
        return result

    async def latest_view(self, count: int) -> dict[str, Any]:
        await wait_for(lambda: len(self.fake.views) >= count, 5)
        return list(self.fake.views.values())[count - 1]


@asynccontextmanager
async def slack_bridge(tmp_path: Path, fake: FakeSlack, *, slack: dict[str, Any] | None = None,
                       route: dict[str, Any] | None = None,
                       extra: dict[str, Any] | None = None,
                       clock: Any = None) -> AsyncIterator[SlackBridge]:
    config: dict[str, Any] = {
        "slack": slack_section(fake, **(slack or {})),
        "routes": [{"name": "deploys", "notify": ["slack:#deploys"], **(route or {})}],
        **(extra or {}),
    }
    async with running_bridge(tmp_path, config, clock=clock) as daemon, httpx.AsyncClient(timeout=10) as http:
        person = Person(fake, http, f"{daemon.base_url}/slack/events", SIGNING_SECRET)
        yield SlackBridge(daemon, fake, http, person)


def confirm_body(**extra: Any) -> dict[str, Any]:
    return {"title": "Deploy api v2.3 to production", "engine": "delta", "tool": "shell",
            "context": {"command": "kubectl rollout restart deploy/api"},
            "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy now?"}], **extra}
