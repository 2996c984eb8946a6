"""ntfy end to end: a real daemon publishes to a fake ntfy server on 127.0.0.1; a person
presses the message's buttons as the ntfy app does (the action's method, headers and body
to its URL); the answer is recorded as the topic's handle and the message is replaced."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from bridge.config import load_settings
from bridge.daemon import Daemon
from bridge.doctor import diagnose
from bridge.models import RequestState
from tests.email.smtp_server import free_port
from tests.fakes.ntfy_server import FakeNtfy, ntfy_server, press
from tests.harness import ManualClock, running_bridge
from tests.timing.helpers import bridge_on, create, step, stored

TOKEN = "tk_fake0123456789"
TEXT = [{"id": "note", "kind": "text", "prompt": "What should I tell them?"}]


def ntfy_config(fake: FakeNtfy, port: int, **route: Any) -> dict[str, Any]:
    return {
        "http": {"listen": f"127.0.0.1:{port}", "public_url": f"http://127.0.0.1:{port}"},
        "ntfy": {"url": fake.url, "token": TOKEN},
        "people": {"ana": ["ntfy:ana-phone", "web:ana"]},
        "routes": [{"name": "deploys", "notify": ["ntfy:ana-phone?priority=5&tags=warning,rocket"], **route}],
    }


@asynccontextmanager
async def setup(tmp_path: Path, **route: Any) -> AsyncIterator[tuple[Daemon, FakeNtfy, ManualClock]]:
    clock = ManualClock()
    async with ntfy_server(TOKEN) as fake, \
            bridge_on(tmp_path, clock, ntfy_config(fake, free_port(), **route)) as daemon:
        yield daemon, fake, clock


async def test_approve_from_the_ntfy_buttons(tmp_path: Path) -> None:
    async with setup(tmp_path) as (daemon, fake, _):
        rid = await create(daemon, title="Deploy api v2.3", agent="deployer")
        message = (await fake.wait_for(1))[0]
        assert message["topic"] == "ana-phone" and message["title"] == "Approval: Deploy api v2.3"
        assert message["priority"] == 5 and message["tags"] == ["warning", "rocket"]  # the route's target says
        assert [a["label"] for a in message["actions"]] == ["Approve", "Reject", "Open"]
        approve = message["actions"][0]
        assert approve["method"] == "POST" and approve["url"].startswith(f"{daemon.base_url}/ntfy/tap/")
        assert message["click"].startswith(f"{daemon.base_url}/inbox/a/")
        async with httpx.AsyncClient() as scanner:  # a link preview fetches the URL: nothing happens
            assert (await scanner.get(approve["url"])).status_code == 405
        assert (await stored(daemon, rid)).is_open

        pressed = await press(message, "Approve")
        await daemon.service.drain()
        assert pressed.status_code == 200, pressed.text
        request = await stored(daemon, rid)
        assert request.state in (RequestState.answered, RequestState.delivered)
        assert request.answer is not None and request.answer.values == {"ok": "yes"} and request.answer.via == "ntfy"
        assert request.answer.responder.key == "ntfy:ana-phone" and request.answer.responder.person == "ana"

        again = await press(message, "Reject")  # the other button of the same message: spent
        assert again.status_code == 404
        closed = (await fake.wait_for(2))[1]
        assert closed["sequence_id"] == message["sequence_id"] and closed["actions"] == []
        assert closed["title"].startswith("Approved by ana") and closed["tags"] == ["white_check_mark"]
        assert closed["priority"] == 2
        await daemon.service.drain()
        assert len(fake.messages) == 2  # the outcome is published once


async def test_reminders_replace_and_the_second_request_is_its_own(tmp_path: Path) -> None:
    async with setup(tmp_path, remind_every="10m") as (daemon, fake, clock):
        first = await create(daemon, title="first")
        second = await create(daemon, title="second")
        await fake.wait_for(2)
        by_title = {m["title"]: m for m in fake.messages}
        await step(daemon, clock, minutes=10)
        reminders = [m for m in await fake.wait_for(4) if m["title"].startswith("Reminder")]
        assert {m["sequence_id"] for m in reminders} == {m["sequence_id"] for m in by_title.values()}
        # a press of the first request's button answers the first request only
        assert (await press(by_title["Approval: first"], "Reject")).status_code == 200
        await daemon.service.drain()
        assert (await stored(daemon, first)).answer.values == {"ok": "no"}  # type: ignore[union-attr]
        assert (await stored(daemon, second)).is_open


async def test_other_kinds_only_open_and_a_forged_press_is_refused(tmp_path: Path) -> None:
    async with setup(tmp_path) as (daemon, fake, _):
        rid = await create(daemon, title="Reply", questions=TEXT)
        message = (await fake.wait_for(1))[0]
        assert [a["label"] for a in message["actions"]] == ["Open"]
        async with httpx.AsyncClient(base_url=daemon.base_url) as forger:
            forged = await forger.post("/ntfy/tap/" + "B" * 43, json={"decision": "approve"})
            assert forged.status_code == 404
            # a push token is no ntfy token, and the other way round
            wrong = await forger.post("/inbox/push/tap/" + "B" * 43, json={"decision": "approve"})
            assert wrong.status_code == 404
        assert (await stored(daemon, rid)).is_open


async def test_a_refused_publish_is_a_failed_copy_and_doctor_checks_the_server(tmp_path: Path) -> None:
    async with setup(tmp_path) as (daemon, fake, _):
        fake.fail_next = [403]
        rid = await create(daemon)
        copies = {p.target: p for p in await daemon.store.list_posts(rid)}
        copy = copies["ntfy:ana-phone?priority=5&tags=warning,rocket"]
        assert not copy.ok and "403" in (copy.error or "")
        async with httpx.AsyncClient(base_url=daemon.base_url) as probe:
            ready = (await probe.get("/readyz")).json()
        assert "channel:ntfy" in str(ready)
        findings = {f.check: f for f in await diagnose(daemon.settings, daemon_url=daemon.base_url)}
        assert findings["ntfy"].status == "ok" and "healthy" in findings["ntfy"].detail
        assert findings["ntfy buttons"].status == "warn"  # public_url is loopback


async def test_the_environment_alone_is_a_complete_set_up(tmp_path: Path) -> None:
    async with ntfy_server() as fake:
        settings = load_settings(None, {
            "HITL_BRIDGE_CONFIG_PATH": str(tmp_path / "none.yaml"), "NTFY_URL": fake.url, "NTFY_TOPIC": "ana-phone",
            "HITL_BRIDGE__STORE__URL": f"sqlite:///{tmp_path}/bridge.db", "HITL_BRIDGE__HTTP__LISTEN": "127.0.0.1:0",
            "HITL_BRIDGE__SOURCES": json.dumps([{"type": "webhook"}])})
        assert settings.default_route.notify == ["web", "ntfy:ana-phone"]
        async with running_bridge(tmp_path, settings=settings) as daemon:
            await create(daemon, title="Deploy from the env?")
            assert (await fake.wait_for(1))[0]["title"] == "Approval: Deploy from the env?"
