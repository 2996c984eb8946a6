"""Send one push message with pywebpush (RFC 8291 encryption, RFC 8292 VAPID signature)
and say what the push service answered: sent, gone (404 / 410: the browser unsubscribed
or the subscription expired), or failed (with the service's status)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import cast

import aiohttp
from pywebpush import WebPushException, webpush_async

from adapters.push.subscriptions import Device
from adapters.push.vapid import VapidKeys

log = logging.getLogger("hitl_bridge.push")
GONE_STATUSES = (404, 410)


@dataclass(frozen=True)
class Sent:
    """One device's result: `status` is the push service's HTTP status (0: no answer)."""

    device: Device
    status: int
    error: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def gone(self) -> bool:
        return self.status in GONE_STATUSES


class PushSender:
    """Sends through one aiohttp session (opened on first use, closed by `close`)."""

    def __init__(self, keys: VapidKeys, subject: str, timeout_s: float) -> None:
        self.keys = keys
        self.subject = subject
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    async def send(self, device: Device, payload: bytes, *, ttl: int, urgency: str = "high") -> Sent:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self.timeout)
        try:
            response = await webpush_async(
                device.info(), data=payload.decode(), vapid_private_key=self.keys.vapid,
                vapid_claims={"sub": self.subject}, ttl=ttl, headers={"Urgency": urgency},
                aiohttp_session=self._session, timeout=cast(float, self.timeout))
        except WebPushException as exc:
            status = exc.response.status if exc.response is not None and hasattr(exc.response, "status") else 0
            return Sent(device, status, f"the push service answered {status}" if status else str(exc)[:200])
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return Sent(device, 0, f"{device.host} did not answer: {type(exc).__name__}")
        return Sent(device, cast(aiohttp.ClientResponse, response).status)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
