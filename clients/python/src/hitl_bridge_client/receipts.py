"""Signed receipts: check that a person decided, with the bridge's public keys.

Every outcome the bridge writes back carries `receipt`, a compact JWS (EdDSA, Ed25519):

    from hitl_bridge_client import verify_receipt
    claims = verify_receipt(body["receipt"], "http://127.0.0.1:8787")   # fetches /.well-known/jwks.json
    claims["sub"], claims["state"], claims["by"]["handle"], claims["via"], claims["values"]

`jwks` is the bridge's address (its JWKS is fetched), the JWKS itself (a dict, or its JSON
text) or a `joserfc` KeySet. A receipt that is malformed, signed by a key not in the set, or
changed by one byte raises `BadReceipt`. Needs `joserfc` (`pip install
'hitl-bridge-client[receipts]'`).
"""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import httpx

ALGORITHMS = ["EdDSA"]
MAX_RECEIPT = 16_384  # a receipt is a few hundred bytes; anything far larger is not one
_COMPACT = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")
JWKS_PATH = "/.well-known/jwks.json"

warnings.filterwarnings("ignore", message="EdDSA is deprecated", module="joserfc")


class BadReceipt(ValueError):
    """The receipt is not one the bridge's keys signed (malformed, unknown key, altered)."""


def fetch_jwks(bridge_url: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """The bridge's public receipt keys (`GET /.well-known/jwks.json`)."""
    response = httpx.get(bridge_url.rstrip("/") + JWKS_PATH, timeout=timeout)
    response.raise_for_status()
    found: dict[str, Any] = response.json()
    return found


def verify_receipt(receipt: str, jwks: Any) -> dict[str, Any]:
    """The receipt's claims, once its signature is checked; BadReceipt otherwise."""
    try:
        from joserfc import jws
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet
    except ImportError:  # pragma: no cover - the extra is missing
        raise ImportError("verify_receipt needs joserfc: pip install 'hitl-bridge-client[receipts]'") from None
    if not isinstance(receipt, str) or len(receipt) > MAX_RECEIPT or not _COMPACT.match(receipt):
        raise BadReceipt("not a compact JWS (three base64url parts)")
    if isinstance(jwks, str) and jwks.lstrip().startswith("{"):
        jwks = json.loads(jwks)
    elif isinstance(jwks, str):
        jwks = fetch_jwks(jwks)
    try:
        keys = jwks if isinstance(jwks, KeySet) else KeySet.import_key_set(jwks)
        found = jws.deserialize_compact(receipt, keys, algorithms=ALGORITHMS)
        claims = json.loads(found.payload)
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise BadReceipt(f"the receipt does not verify: {type(exc).__name__}: {exc}") from None
    if not isinstance(claims, dict) or not isinstance(claims.get("sub"), str):
        raise BadReceipt("the receipt's claims are not a hitl-bridge receipt")
    return claims
