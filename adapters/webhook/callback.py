"""Signed callbacks: HMAC-SHA256 over `{timestamp}.{body}` with the request's callback secret.

Headers sent:
    X-Hitl-Timestamp: <unix seconds>
    X-Hitl-Signature: v1=<hex HMAC-SHA256(secret, f"{timestamp}.{raw body}")>
    X-Hitl-Request-Id: <bridge request id>
    X-Hitl-Event: answered | expired | cancelled
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

SIGNATURE_HEADER = "X-Hitl-Signature"
TIMESTAMP_HEADER = "X-Hitl-Timestamp"


def sign(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


def verify(secret: str, headers: dict[str, str], body: bytes, *, tolerance_s: int = 300,
           now: float | None = None) -> bool:
    """What a receiver does (the README has the same in 10 lines)."""
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        timestamp = int(lower[TIMESTAMP_HEADER.lower()])
    except (KeyError, ValueError):
        return False
    if abs((now or time.time()) - timestamp) > tolerance_s:
        return False
    expected = sign(secret, timestamp, body)
    return hmac.compare_digest(expected, lower.get(SIGNATURE_HEADER.lower(), ""))


def signed_request(secret: str, payload: dict[str, Any], request_id: str, event: str) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload, separators=(",", ":"), default=str).encode()
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(secret, timestamp, body),
        "X-Hitl-Request-Id": request_id,
        "X-Hitl-Event": event,
        "User-Agent": "hitl-bridge/0.1",
    }
    return body, headers


def host_allowed(url: str, allow: list[str]) -> bool:
    """Empty allow-list: any host. Otherwise the URL's host must match one glob."""
    if not allow:
        return True
    host = (urlsplit(url).hostname or "").lower()
    return any(fnmatchcase(host, pattern.lower()) for pattern in allow)
