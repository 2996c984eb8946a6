"""Browsers' push subscriptions, one per device, kept per inbox login in the store's
key/value space (every replica sends to the same devices), and the ones a push service
said are gone (404 / 410), kept a while so the inbox and doctor can show them.

A subscription comes from a browser, so it is checked like any input: an endpoint on one of
the configured push services (the daemon posts to nothing else), the P-256 public key and
the 16-byte auth secret of RFC 8291, and nothing oversized.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from bridge.store.base import Store

NAMESPACE = "push-subscription"  # "<login> <endpoint digest>" -> {endpoint, p256dh, auth, added, agent}
GONE = "push-subscription.gone"  # same key -> {endpoint host, status, at}
KEEP_GONE = timedelta(days=30)
MAX_ENDPOINT = 2048
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class BadSubscription(ValueError):
    """What a browser sent is not a subscription this daemon will send to (the message says why)."""


@dataclass(frozen=True)
class Device:
    login: str
    endpoint: str
    p256dh: str
    auth: str
    added: str = ""
    agent: str = ""

    @property
    def key(self) -> str:
        return device_key(self.login, self.endpoint)

    @property
    def host(self) -> str:
        return urlsplit(self.endpoint).hostname or "?"

    @property
    def name(self) -> str:
        """`Chrome on Android`, from the browser's User-Agent, for the person to tell devices apart."""
        return device_name(self.agent)

    def info(self) -> dict[str, Any]:
        """What pywebpush takes."""
        return {"endpoint": self.endpoint, "keys": {"p256dh": self.p256dh, "auth": self.auth}}


def device_name(agent: str) -> str:
    """`Firefox on Linux`; "a browser" when the User-Agent says nothing we know."""
    browsers = (("Edg/", "Edge"), ("Firefox/", "Firefox"), ("Chrome/", "Chrome"), ("Safari/", "Safari"))
    systems = (("Android", "Android"), ("iPhone", "iPhone"), ("iPad", "iPad"), ("Windows", "Windows"),
               ("Mac OS X", "macOS"), ("Linux", "Linux"))
    browser = next((name for mark, name in browsers if mark in agent), "a browser")
    system = next((name for mark, name in systems if mark in agent), "")
    return f"{browser} on {system}" if system else browser


def device_key(login: str, endpoint: str) -> str:
    return f"{login} {hashlib.sha256(endpoint.encode()).hexdigest()[:32]}"


def _b64(value: Any, size: int, name: str) -> str:
    if not isinstance(value, str) or len(value) > 200:
        raise BadSubscription(f"keys.{name} is missing")
    try:
        raw = base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "=" * (-len(value) % 4))
    except ValueError:
        raise BadSubscription(f"keys.{name} is not base64url") from None
    if len(raw) != size or (name == "p256dh" and raw[0] != 4):
        raise BadSubscription(f"keys.{name} is not a {'P-256 public key' if name == 'p256dh' else '16-byte secret'}")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def allowed_host(host: str, services: list[str]) -> bool:
    host = host.lower()
    return any(host == s or (s.startswith(".") and host.endswith(s)) for s in services)


def parse_subscription(data: Any, login: str, services: list[str], *, added: str, agent: str = "") -> Device:
    """A browser's `PushSubscription.toJSON()` as a device of `login`; BadSubscription otherwise."""
    if not isinstance(data, dict):
        raise BadSubscription("send the browser's subscription as a JSON object")
    endpoint, keys = data.get("endpoint"), data.get("keys")
    if not isinstance(endpoint, str) or not endpoint or len(endpoint) > MAX_ENDPOINT:
        raise BadSubscription("endpoint is missing or too long")
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    if parts.username or parts.password or not host:
        raise BadSubscription("endpoint is not a push service URL")
    if parts.scheme != "https" and not (parts.scheme == "http" and host in LOOPBACK):
        raise BadSubscription("endpoint must be https")
    if not allowed_host(host, services):
        raise BadSubscription(f"{host[:80]} is not a push service this bridge sends to (push.push_services)")
    if not isinstance(keys, dict):
        raise BadSubscription("keys are missing")
    return Device(login, endpoint, _b64(keys.get("p256dh"), 65, "p256dh"), _b64(keys.get("auth"), 16, "auth"),
                  added=added, agent=agent[:120])


class Devices:
    """The devices of every login, in the store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def add(self, device: Device, limit: int) -> None:
        """Keep `device` (again: the same endpoint replaces its old keys); BadSubscription past `limit`."""
        mine = await self.of(device.login)
        if device.key not in {d.key for d in mine} and len(mine) >= limit:
            raise BadSubscription(f"{device.login} already has {limit} devices: turn one off first")
        await self.store.kv_put(NAMESPACE, device.key, {
            "endpoint": device.endpoint, "p256dh": device.p256dh, "auth": device.auth,
            "added": device.added, "agent": device.agent})
        await self.store.kv_delete(GONE, device.key)

    async def remove(self, login: str, key: str) -> bool:
        """Turn one device of `login` off (a key of another login removes nothing)."""
        return key.startswith(f"{login} ") and await self.store.kv_delete(NAMESPACE, key)

    async def of(self, login: str) -> list[Device]:
        return [d for d in await self.all() if d.login == login]

    async def all(self) -> list[Device]:
        out = []
        for key, row in await self.store.kv_items(NAMESPACE):
            login = key.rpartition(" ")[0]
            try:
                out.append(Device(login, str(row["endpoint"]), str(row["p256dh"]), str(row["auth"]),
                                  str(row.get("added", "")), str(row.get("agent", ""))))
            except KeyError:
                continue
        return out

    async def drop(self, device: Device, status: int, now: datetime) -> None:
        """The push service says this subscription is gone: forget it, remember that it went."""
        if await self.store.kv_delete(NAMESPACE, device.key):
            await self.store.kv_put(GONE, device.key, {"login": device.login, "host": device.host,
                                                       "status": status, "at": now.isoformat(),
                                                       "agent": device.agent}, now + KEEP_GONE)

    async def gone(self, now: datetime, login: str | None = None) -> list[dict[str, Any]]:
        rows = [row for _, row in await self.store.kv_items(GONE, now)]
        return [r for r in rows if login is None or r.get("login") == login]

    async def drop_all(self, now: datetime) -> int:
        """Forget every subscription (the VAPID key they were made for is lost)."""
        devices = await self.all()
        for device in devices:
            await self.drop(device, 0, now)
        return len(devices)
