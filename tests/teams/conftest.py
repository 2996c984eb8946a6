"""Fixtures: the fake Microsoft side (tests/fakes/teams_api.py), a real daemon with the
Teams channel, and people who act by sending signed activities to /teams/messages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.daemon import Daemon
from bridge.models import Request
from tests.fakes.teams_api import TENANT, FakeTeams
from tests.harness import running_bridge, wait_for

CHANNEL = "19:deploys@thread.tacv2"
ANA = "aaaaaaaa-0000-0000-0000-000000000001"
BEN = "bbbbbbbb-0000-0000-0000-000000000002"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTeams]:
    async with FakeTeams() as server:
        yield server


@dataclass
class TeamsBridge:
    daemon: Daemon
    fake: FakeTeams
    http: httpx.AsyncClient

    @property
    def endpoint(self) -> str:
        return f"{self.daemon.base_url}/teams/messages"

    async def send(self, activity: dict[str, Any], token: str | None = None) -> httpx.Response:
        token = token if token is not None else self.fake.activity_token(activity.get("serviceUrl"))
        return await self.http.post(self.endpoint, json=activity, headers={"Authorization": f"Bearer {token}"})

    def conversation(self, kind: str = "channel", conversation_id: str = CHANNEL) -> dict[str, Any]:
        return {"id": conversation_id, "conversationType": kind, "tenantId": TENANT}

    def activity(self, kind: str, *, who: str = ANA, name: str = "Ana", personal: bool = False,
                 **extra: Any) -> dict[str, Any]:
        conversation = self.conversation("personal", f"a:personal-{who}") if personal else self.conversation()
        channel_data: dict[str, Any] = {"tenant": {"id": TENANT}}
        if not personal:
            channel_data["channel"] = {"id": CHANNEL}
        return {"type": kind, "id": "x", "serviceUrl": self.fake.service_url, "channelId": "msteams",
                "conversation": conversation, "channelData": channel_data,
                "from": {"id": f"29:{who}", "aadObjectId": who, "name": name},
                "recipient": {"id": "28:bot"}, **extra}

    async def install(self, *, personal_for: str | None = None) -> None:
        """The app is added to the deploys channel (or, for a person, to their personal scope)."""
        activity = self.activity("conversationUpdate", who=personal_for or ANA, personal=personal_for is not None,
                                 membersAdded=[{"id": "28:bot"}])
        response = await self.send(activity)
        assert response.status_code == 200, response.text

    async def click(self, verb: str, data: dict[str, Any], *, who: str = ANA, name: str = "Ana",
                    personal: bool = False) -> dict[str, Any]:
        activity = self.activity("invoke", who=who, name=name, personal=personal, name_="x")
        activity.pop("name_")
        activity["name"] = "adaptiveCard/action"
        activity["value"] = {"action": {"type": "Action.Execute", "verb": verb, "data": data}}
        response = await self.send(activity)
        assert response.status_code == 200, response.text
        return dict(response.json())

    async def task(self, name: str, data: dict[str, Any], *, who: str = ANA, personal: bool = True
                   ) -> dict[str, Any]:
        activity = self.activity("invoke", who=who, personal=personal)
        activity["name"] = name
        activity["value"] = {"data": data}
        response = await self.send(activity)
        assert response.status_code == 200, response.text
        return dict(response.json())

    async def create(self, body: dict[str, Any]) -> str:
        response = await self.http.post(f"{self.daemon.base_url}/v1/requests", json=body)
        assert response.status_code in (200, 201), response.text
        return str(response.json()["id"])

    async def card_in(self, conversation_id: str, count: int = 1) -> list[Any]:
        found: list[Any] = await wait_for(lambda: (lambda a: a if len(a) >= count else None)(
            self.fake.in_conversation(conversation_id)), 10)
        return found

    async def closed(self, request_id: str) -> Request:
        async def done() -> Request | None:
            request = await self.daemon.store.get_request(request_id)
            return request if request is not None and not request.is_open else None
        result: Request = await wait_for(done, 10)
        return result


@asynccontextmanager
async def teams_bridge(tmp_path: Path, fake: FakeTeams, *, route: dict[str, Any] | None = None,
                       teams: dict[str, Any] | None = None, clock: Any = None) -> AsyncIterator[TeamsBridge]:
    config: dict[str, Any] = {
        "teams": fake.section(**(teams or {})),
        "routes": [{"name": "deploys", "notify": [f"teams:channel:{CHANNEL}"], **(route or {})}],
    }
    async with running_bridge(tmp_path, config, clock=clock) as daemon, httpx.AsyncClient(timeout=10) as http:
        yield TeamsBridge(daemon, fake, http)


def confirm_body(**extra: Any) -> dict[str, Any]:
    return {"title": "Deploy api v2.3 to production", "engine": "delta", "tool": "shell",
            "context": {"command": "kubectl rollout restart deploy/api", "arguments": {"replicas": 3}},
            "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy now?"}], **extra}
