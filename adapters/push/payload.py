"""What a push message carries (pure functions, no I/O): the JSON the service worker turns
into a notification. Every message of one request has the same `tag`, so a later one
(a reminder, the outcome) replaces the earlier notification instead of adding one.

The payload is encrypted for the device (RFC 8291) and push services cap it near 4 KiB,
so it holds only the words, the tag and two URLs: where a button's decision is POSTed
(a one-use token, bridge.action_tokens) and where Open leads (an answer link, bridge.links).
"""

from __future__ import annotations

import json
from typing import Any

from adapters.notice import closed_notice, request_notice
from bridge.action_tokens import one_tap
from bridge.models import Request

#: push services accept 4096 bytes of ciphertext; the encryption adds a header and padding
MAX_PAYLOAD = 3800


def tag_of(request: Request) -> str:
    return f"hitl-{request.id}"


def request_payload(request: Request, *, tap_url: str | None, open_url: str, reminder: bool = False) -> bytes:
    """A new (or reminded) request: Approve and Reject when one tap answers it, else Open."""
    notice = request_notice(request, reminder=reminder)
    actions: list[dict[str, str]]
    if tap_url is not None and one_tap(request):
        actions = [{"action": "approve", "title": "Approve"}, {"action": "reject", "title": "Reject"}]
    else:
        actions, tap_url = [{"action": "open", "title": "Open"}], None
    return _encode({"v": 1, "kind": "request", "tag": tag_of(request), "title": notice.title, "body": notice.body,
                    "actions": actions, "tap": tap_url, "url": open_url, "renotify": reminder})


def closed_payload(request: Request, *, open_url: str) -> bytes:
    """The request was answered (here or elsewhere), expired or cancelled: replaces the question."""
    notice = closed_notice(request)
    return _encode({"v": 1, "kind": "closed", "tag": tag_of(request), "title": notice.title, "body": notice.body,
                    "actions": [], "tap": None, "url": open_url, "renotify": False})


def _encode(data: dict[str, Any]) -> bytes:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    while len(body) > MAX_PAYLOAD and len(data["body"]) > 20:  # a very long title or URL: shorten the text
        data["body"] = data["body"][: len(data["body"]) // 2] + "…"
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    return body
