"""Signed callbacks, both ways the bridge signs them: what the daemon sends and what a
receiver checks (one copy, used by both).

`hitl` (the default):
    X-Hitl-Timestamp: <unix seconds>
    X-Hitl-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>
  the key is the secret string's UTF-8 bytes.

`standard` (Standard Webhooks, https://www.standardwebhooks.com):
    webhook-id: <message id, the same when a message is sent again>
    webhook-timestamp: <unix seconds>
    webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>
  a `whsec_<base64>` secret is the base64 of the key, as every Standard Webhooks library
  reads it; any other secret is the key's raw UTF-8 bytes, so hand a Standard Webhooks
  verifier `standard_secret(secret)` (= "whsec_" + base64 of those bytes).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Mapping

SCHEMES = ("hitl", "standard")
TOLERANCE_S = 300  # refuse replays older (or newer) than 5 minutes
HITL_TIMESTAMP = "x-hitl-timestamp"
HITL_SIGNATURE = "x-hitl-signature"
WEBHOOK_ID = "webhook-id"
WEBHOOK_TIMESTAMP = "webhook-timestamp"
WEBHOOK_SIGNATURE = "webhook-signature"
WHSEC = "whsec_"
MIN_KEY_BYTES, MAX_KEY_BYTES = 24, 64  # what the Standard Webhooks spec asks of a whsec_ key


class BadSecret(ValueError):
    """A `whsec_` secret that is not base64 of 24 to 64 bytes."""


def standard_key(secret: str) -> bytes:
    """The HMAC key of a Standard Webhooks secret (see the module's note)."""
    if not secret.startswith(WHSEC):
        return secret.encode()
    encoded = secret[len(WHSEC):]
    try:
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)  # padding optional
    except (binascii.Error, ValueError):
        raise BadSecret("a whsec_ secret must be whsec_ followed by base64") from None
    if not key:
        raise BadSecret("a whsec_ secret must hold a key after whsec_")
    return key


def check_secret(secret: str) -> str:
    """A callback secret the daemon accepts: a `whsec_` one must hold 24 to 64 bytes (the
    spec's advice; verifiers take any length)."""
    key = standard_key(secret)
    if secret.startswith(WHSEC) and not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
        raise BadSecret(f"a whsec_ secret must hold {MIN_KEY_BYTES} to {MAX_KEY_BYTES} bytes, "
                        f"this one holds {len(key)}")
    return secret


def standard_secret(secret: str) -> str:
    """The same key as a `whsec_` secret, for an off-the-shelf Standard Webhooks verifier."""
    return secret if secret.startswith(WHSEC) else WHSEC + base64.b64encode(secret.encode()).decode()


def sign_hitl(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


def sign_standard(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(standard_key(secret), f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def signature_headers(scheme: str, secret: str, body: bytes, message_id: str,
                      timestamp: int | None = None) -> dict[str, str]:
    """The headers that sign `body` the `scheme` way."""
    ts = int(time.time()) if timestamp is None else timestamp
    if scheme == "standard":
        return {"webhook-id": message_id, "webhook-timestamp": str(ts),
                "webhook-signature": sign_standard(secret, message_id, ts, body)}
    if scheme == "hitl":
        return {"X-Hitl-Timestamp": str(ts), "X-Hitl-Signature": sign_hitl(secret, ts, body)}
    raise ValueError(f"unknown signing scheme {scheme!r}: use one of {', '.join(SCHEMES)}")


def verify_callback(secret: str, headers: Mapping[str, str], body: bytes, *, tolerance_s: float = TOLERANCE_S,
                    now: float | None = None) -> bool:
    """True when `body` was signed with `secret` within `tolerance_s` of now, either way
    (Standard Webhooks headers when present, else X-Hitl-*). `headers` in any letter case."""
    lower = {k.lower(): v for k, v in headers.items()}
    standard = WEBHOOK_SIGNATURE in lower
    try:
        timestamp = int(lower[WEBHOOK_TIMESTAMP if standard else HITL_TIMESTAMP])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance_s:
        return False
    if not standard:
        return _same(sign_hitl(secret, timestamp, body), lower.get(HITL_SIGNATURE, ""))
    message_id = lower.get(WEBHOOK_ID, "")
    if not message_id:
        return False
    try:
        expected = sign_standard(secret, message_id, timestamp, body)
    except BadSecret:
        return False
    # a space-separated list: several signatures while a secret is being rotated
    return any(_same(expected, given) for given in lower[WEBHOOK_SIGNATURE].split())


def _same(expected: str, given: str) -> bool:
    # as bytes: compare_digest refuses str with non-ASCII characters, which a forger may send
    return hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))
