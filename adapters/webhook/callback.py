"""Signed callbacks: the outcome as JSON, signed with the request's callback secret the
`hitl` way (X-Hitl-Timestamp / X-Hitl-Signature, the default) or the Standard Webhooks way
(webhook-id / webhook-timestamp / webhook-signature) — the algorithms live in the client
package (`hitl_bridge_client.signing`), which receivers use to verify.

Headers sent besides the signature:
    X-Hitl-Request-Id: <bridge request id>
    X-Hitl-Event: answered | expired | cancelled
"""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

from hitl_bridge_client.signing import signature_headers


def signed_request(secret: str, payload: dict[str, Any], request_id: str, event: str,
                   scheme: str = "hitl") -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload, separators=(",", ":"), default=str).encode()
    # one id per outcome of a request: the same when the outcome is sent again (retries, redeliver)
    headers = {"Content-Type": "application/json",
               **signature_headers(scheme, secret, body, message_id=f"msg_{request_id}_{event}"),
               "X-Hitl-Request-Id": request_id, "X-Hitl-Event": event, "User-Agent": "hitl-bridge/0.1"}
    return body, headers


def host_allowed(url: str, allow: list[str]) -> bool:
    """Empty allow-list: any host. Otherwise the URL's host must match one glob."""
    if not allow:
        return True
    host = (urlsplit(url).hostname or "").lower()
    return any(fnmatchcase(host, pattern.lower()) for pattern in allow)
