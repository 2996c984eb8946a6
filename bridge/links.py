"""Answer links: a per-recipient token that lets one handle answer one request without a
login (an email's "answer" link, DESIGN §8).

A token is 256 random bits, kept in the store's key/value space (so every replica honours
it) with the request and the handle it was made for. It is only a key to a page: opening
the page never answers, and once the request is closed the page says so and accepts
nothing. The same recipient gets the same link again (reminders, escalation mails).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from bridge.store.base import Store

if TYPE_CHECKING:
    from bridge.config_daemon import HttpSettings

TOKENS = "answer-link"  # token -> {request_id, handle}
BY_RECIPIENT = "answer-link.by"  # "<request id> <handle>" -> {token}
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")
#: a link outlives its request's deadline by this much (then the store may forget it)
KEEP_AFTER_DEADLINE = timedelta(days=30)


@dataclass(frozen=True)
class AnswerLink:
    token: str
    request_id: str
    handle: str  # who it was sent to, e.g. email:ana@example.com


async def link_for(store: Store, request_id: str, handle: str, *, deadline: datetime | None) -> AnswerLink:
    """The recipient's link to this request (made on first use, then the same one)."""
    key = f"{request_id} {handle}"
    known = await store.kv_get(BY_RECIPIENT, key)
    if known is not None and isinstance(known.get("token"), str):
        return AnswerLink(known["token"], request_id, handle)
    token = secrets.token_urlsafe(32)
    expires = deadline + KEEP_AFTER_DEADLINE if deadline is not None else None
    await store.kv_put(TOKENS, token, {"request_id": request_id, "handle": handle}, expires)
    await store.kv_put(BY_RECIPIENT, key, {"token": token}, expires)
    return AnswerLink(token, request_id, handle)


async def resolve(store: Store, token: str, now: datetime | None = None) -> AnswerLink | None:
    """The link a token stands for, or None for anything else (malformed, forged, forgotten)."""
    if not TOKEN_RE.fullmatch(token):
        return None
    found = await store.kv_get(TOKENS, token, now)
    if found is None:
        return None
    request_id, handle = found.get("request_id"), found.get("handle")
    if not isinstance(request_id, str) or not isinstance(handle, str):
        return None
    return AnswerLink(token, request_id, handle)


def link_base(http: HttpSettings) -> str:
    """Where links people open point: `http.public_url`, else the listen address (loopback
    for a wildcard one, which only this machine can open; the channels warn about it)."""
    host = "127.0.0.1" if http.host in ("0.0.0.0", "::", "") else http.host
    return (http.public_url or f"http://{host}:{http.port}").rstrip("/")
