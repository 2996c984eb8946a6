"""A person's phone for the push tests: an httpx client that logs in to the inbox and turns
notifications on with a subscription made by the fake push service."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.fakes.push_service import FakePushService
from tests.web.helpers import csrf_of

ANA_TOKEN = "ana-inbox-token-0123456789"
BO_TOKEN = "bo-inbox-token-0123456789"


def push_config(service: FakePushService, **extra: Any) -> dict[str, Any]:
    return {
        "web": {"tokens": {"ana": ANA_TOKEN, "bo": BO_TOKEN}},
        "push": {"subject": "mailto:ops@example.com", "push_services": ["127.0.0.1"]},
        "people": {"ana": ["web:ana", "push:ana"], "bo": ["web:bo", "push:bo"]},
        "routes": [{"name": "deploys", "notify": ["push:ana"]}],
        **extra,
    }


async def log_in(client: httpx.AsyncClient, token: str) -> None:
    page = await client.get("/inbox/login")
    done = await client.post("/inbox/login", data={"csrf": csrf_of(page.text), "secret": token, "next": "/inbox"})
    assert done.status_code == 303, done.text


async def push_page(client: httpx.AsyncClient) -> tuple[str, str, str]:
    """(VAPID public key, CSRF token, page text) of /inbox/push."""
    page = await client.get("/inbox/push")
    assert page.status_code == 200, page.text
    key = re.search(r'data-key="([^"]*)"', page.text)
    csrf = re.search(r'data-csrf="([^"]*)"', page.text)
    assert key and csrf, page.text
    return key.group(1), csrf.group(1), page.text


async def turn_on(client: httpx.AsyncClient, service: FakePushService) -> dict[str, Any]:
    """Subscribe like push.js does; the subscription the fake push service made."""
    key, csrf, _ = await push_page(client)
    subscription = service.subscribe(key)
    done = await client.post("/inbox/push/devices", json=subscription, headers={"X-CSRF-Token": csrf})
    assert done.status_code == 201, done.text
    return subscription
