"""Shared helpers: a real daemon wired to the fake Telegram Bot API, and small waits."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from bridge.daemon import Daemon
from bridge.models import Request, RequestState
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import merge, running_bridge, wait_for

WEBHOOK_SECRET = "hook_S3cret-for-tests"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def telegram_config(fake: FakeTelegram, *, mode: str = "polling", notify: list[str] | None = None,
                    responders: list[str] | None = None, port: int = 0, **route: Any) -> dict[str, Any]:
    """Daemon config: Telegram on the fake, one route to `notify` (default telegram:42)."""
    section: dict[str, Any] = {
        "bot_token": fake.token, "api_url": fake.api_url, "mode": mode,
        "per_chat_interval": fake.per_chat_interval, "poll_timeout": 2, "retries": 3,
    }
    config: dict[str, Any] = {"telegram": section, "routes": [
        {"match": {}, "notify": notify or ["telegram:42"], "responders": responders or [], **route}]}
    if mode == "webhook":
        section.update(webhook_url=f"http://127.0.0.1:{port}/telegram/webhook", webhook_secret=WEBHOOK_SECRET)
        config["http"] = {"listen": f"127.0.0.1:{port}"}
    return config


@asynccontextmanager
async def telegram_bridge(tmp_path: Path, fake: FakeTelegram, *, mode: str = "polling",
                          extra: dict[str, Any] | None = None, clock: Any = None,
                          **kw: Any) -> AsyncIterator[Daemon]:
    """A daemon on the fake; `clock` (a tests.harness.ManualClock) drives its timers."""
    port = free_port() if mode == "webhook" else 0
    config = merge(telegram_config(fake, mode=mode, port=port, **kw), extra or {})
    async with running_bridge(tmp_path, config, clock=clock) as daemon:
        yield daemon


def confirm(title: str, **extra: Any) -> dict[str, Any]:
    """A request body: one `confirm` question ("OK?") under `title`."""
    return {"title": title, "questions": [{"kind": "confirm", "prompt": "OK?"}], **extra}


async def submit(daemon: Daemon, body: dict[str, Any]) -> str:
    async with httpx.AsyncClient(base_url=daemon.base_url) as client:
        resp = await client.post("/v1/requests", json=body)
        assert resp.status_code in (200, 201), resp.text
        request_id: str = resp.json()["id"]
        return request_id


async def request_of(daemon: Daemon, request_id: str) -> Request:
    request = await daemon.store.get_request(request_id)
    assert request is not None
    return request


async def closed(daemon: Daemon, request_id: str, timeout: float = 10.0) -> Request:
    async def done() -> Request | None:
        request = await request_of(daemon, request_id)
        return None if request.is_open else request
    result: Request = await wait_for(done, timeout)
    return result


async def posted_message(fake: FakeTelegram, chat_id: int, request_title: str, timeout: float = 10.0) -> dict[str, Any]:
    """The bot's message showing the request titled `request_title` in `chat_id`."""
    def find() -> dict[str, Any] | None:
        return next((m for m in fake.sent_to(chat_id) if request_title in m["text"]), None)
    message: dict[str, Any] = await fake.wait_for(find, timeout)
    return message


async def posts_recorded(daemon: Any, timeout: float = 10.0) -> None:
    """Wait until no request is still `pending`: a message is out before the store records its
    copy, and /pending lists what the store says."""
    async def none_pending() -> bool:
        return not await daemon.store.list_requests(states=[RequestState.pending], limit=1)
    await wait_for(none_pending, timeout)


async def last_text_to(fake: FakeTelegram, chat_id: int, contains: str, timeout: float = 10.0) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        return next((m for m in reversed(fake.sent_to(chat_id)) if contains in m["text"]), None)
    message: dict[str, Any] = await fake.wait_for(find, timeout)
    return message
