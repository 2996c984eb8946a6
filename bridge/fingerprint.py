"""A request's fingerprint: a stable hash of what it asks, stored with it, so that a
repeated `external_id` is honoured only as a retry of the very same request."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from bridge.models import RequestIn

#: what a person is shown and decides on, and who may decide (not the deadline, which a retry
#: computes again, nor the callback secret)
DECISIVE = ("title", "description", "engine", "workspace", "run_id", "agent", "tool", "context", "labels",
            "questions", "responders", "requested_by")


def decisive_content(request: RequestIn) -> dict[str, Any]:
    content = request.model_dump(mode="json", include=set(DECISIVE))
    content["responders"] = sorted({entry.strip() for entry in request.responders})
    callback = request.callback
    content["callback"] = None if callback is None else {"url": callback.url, "signing": callback.signing}
    return content


def fingerprint(request: RequestIn) -> str:
    """`sha256:<hex>` of the request's decisive content as canonical JSON."""
    text = json.dumps(decisive_content(request), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
