"""A fake Web Push service on 127.0.0.1, checking what a real one checks and decrypting what
a real browser would: each POST must carry a VAPID `Authorization: vapid t=<JWT>, k=<key>`
(RFC 8292) whose ES256 signature verifies against `k`, whose `aud` is this service's origin
and whose `exp` is within 24 hours, signed by the key the subscription was made for; the
body must be `aes128gcm` (RFC 8188 / RFC 8291) and is decrypted with the subscriber's
private key and auth secret (http_ece, the library pywebpush itself uses).

A test makes subscriptions (`subscribe(server_key)` gives the browser's `toJSON()`), reads
what each received (`inbox[sub]`), and can answer 404 / 410 for one (`gone`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import http_ece
import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bridge.http.loopback import serving


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Received:
    payload: dict[str, Any]
    ttl: int
    urgency: str
    subject: str


@dataclass
class Subscriber:
    """One browser's subscription: its ECDH key pair and auth secret."""

    sid: str
    server_key: str  # the applicationServerKey it was made with
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    auth: bytes = field(default_factory=lambda: os.urandom(16))

    def public(self) -> str:
        return b64(self.key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint))


class FakePushService:
    def __init__(self) -> None:
        self.port = 0
        self.subscribers: dict[str, Subscriber] = {}
        self.inbox: dict[str, list[Received]] = {}
        self.refused: list[tuple[str, int, str]] = []  # (sid, status, why)
        self.gone: dict[str, int] = {}  # sid -> 404 / 410
        self.arrived = asyncio.Event()
        self.app = Starlette(routes=[Route("/push/{sid}", self._push, methods=["POST"])])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def subscribe(self, server_key: str) -> dict[str, Any]:
        """A new subscription, as `PushSubscription.toJSON()` gives it."""
        sid = b64(os.urandom(12))
        sub = Subscriber(sid, server_key)
        self.subscribers[sid] = sub
        self.inbox[sid] = []
        return {"endpoint": f"{self.origin}/push/{sid}", "expirationTime": None,
                "keys": {"p256dh": sub.public(), "auth": b64(sub.auth)}}

    @staticmethod
    def sid_of(subscription: dict[str, Any]) -> str:
        return str(subscription["endpoint"]).rsplit("/", 1)[1]

    def _refuse(self, sid: str, status: int, why: str) -> Response:
        self.refused.append((sid, status, why))
        self.arrived.set()
        return Response(why, status_code=status)

    def check_vapid(self, header: str, server_key: str) -> dict[str, Any]:
        """The VAPID claims, or ValueError saying what a push service would refuse."""
        scheme, _, params = header.partition(" ")
        if scheme.lower() != "vapid":
            raise ValueError(f"not a vapid authorization: {scheme!r}")
        parts = dict(p.strip().split("=", 1) for p in params.split(","))
        if parts.get("k") != server_key:
            raise ValueError("signed with another key than the subscription's applicationServerKey")
        numbers = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(parts["k"]))
        claims: dict[str, Any] = jwt.decode(parts["t"], numbers, algorithms=["ES256"], audience=self.origin)
        if not (time.time() < claims["exp"] <= time.time() + 86_400):
            raise ValueError("exp must be within 24 hours")
        if not str(claims.get("sub", "")).startswith(("mailto:", "https://")):
            raise ValueError("sub must be mailto: or https:")
        return claims

    async def _push(self, request: Request) -> Response:
        sid = request.path_params["sid"]
        sub = self.subscribers.get(sid)
        if sub is None:
            return self._refuse(sid, 404, "no such subscription")
        if sid in self.gone:
            return self._refuse(sid, self.gone[sid], "unsubscribed")
        try:
            claims = self.check_vapid(request.headers.get("authorization", ""), sub.server_key)
        except (ValueError, KeyError, jwt.PyJWTError) as exc:
            return self._refuse(sid, 403, f"bad VAPID: {exc}")
        if request.headers.get("content-encoding") != "aes128gcm" or "ttl" not in request.headers:
            return self._refuse(sid, 400, "content-encoding must be aes128gcm, and TTL is required")
        body = await request.body()
        if len(body) > 4096:
            return self._refuse(sid, 413, "payload too large")
        try:
            plain = http_ece.decrypt(body, private_key=sub.key, auth_secret=sub.auth, version="aes128gcm")
        except Exception as exc:  # a payload the browser could not decrypt
            return self._refuse(sid, 400, f"cannot decrypt: {exc}")
        self.inbox[sid].append(Received(json.loads(plain), int(request.headers["ttl"]),
                                        request.headers.get("urgency", ""), str(claims["sub"])))
        self.arrived.set()
        return Response(status_code=201)

    async def wait_for(self, sid: str, count: int, timeout: float = 10.0) -> list[Received]:
        """The messages `sid` received once it has at least `count` (polls with a deadline)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            self.arrived.clear()
            if len(self.inbox[sid]) >= count:
                return self.inbox[sid]
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise AssertionError(f"{sid} has {len(self.inbox[sid])} messages, wanted {count}; "
                                     f"refused: {self.refused}")
            try:
                await asyncio.wait_for(self.arrived.wait(), left)
            except TimeoutError:
                pass


@asynccontextmanager
async def push_service() -> AsyncIterator[FakePushService]:
    service = FakePushService()
    async with serving(service.app, "fake push service") as port:
        service.port = port
        yield service
