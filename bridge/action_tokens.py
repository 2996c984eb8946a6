"""Decision tokens: what a notification's Approve and Reject buttons carry (a Web Push
notification's service worker, an ntfy `http` action).

A token is 256 random bits kept in the store's key/value space (every replica honours it)
with the request and the handle it was made for (`push:ana`, `ntfy:ops`). Unlike an email's
answer link (bridge.links), it decides without a page in between, so it is spent by its
first use: the first POST that presents it claims it (`Store.kv_delete` answers True to one
caller only), a replay finds nothing. It only ever answers its own request as its own
handle; opening its URL with a GET decides nothing.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from bridge.models import Request
from bridge.questions import QuestionKind
from bridge.store.base import Store

TOKENS = "decision-token"  # token -> {request_id, handle}
BY_RECIPIENT = "decision-token.by"  # "<request id> <handle>" -> {token}
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")
#: a token outlives its request's deadline by this much (then the store may forget it)
KEEP_AFTER_DEADLINE = timedelta(days=2)


class Decision(StrEnum):
    """What a one-tap button says."""

    approve = "approve"
    reject = "reject"


@dataclass(frozen=True)
class DecisionToken:
    token: str
    request_id: str
    handle: str  # who it was sent to: the voter it answers as


def one_tap(request: Request) -> bool:
    """True when Approve / Reject answer the whole request: one confirm question, no secret."""
    return len(request.questions) == 1 and request.questions[0].kind is QuestionKind.confirm \
        and not request.secret_question_ids


def decision_values(request: Request, decision: Decision) -> dict[str, Any]:
    """The answer a button records; ValueError for a request one tap cannot answer."""
    if not one_tap(request):
        raise ValueError("this request needs more than Approve or Reject: open it to answer")
    return {request.questions[0].id: "yes" if decision is Decision.approve else "no"}


async def token_for(store: Store, request_id: str, handle: str, *, deadline: datetime | None) -> DecisionToken:
    """The recipient's token for this request: made on first use, then the same one until it
    is spent (a reminder or an escalation shows the same buttons)."""
    key = f"{request_id} {handle}"
    known = await store.kv_get(BY_RECIPIENT, key)
    if known is not None and isinstance(known.get("token"), str) \
            and await store.kv_get(TOKENS, known["token"]) is not None:
        return DecisionToken(known["token"], request_id, handle)
    token = secrets.token_urlsafe(32)
    expires = deadline + KEEP_AFTER_DEADLINE if deadline is not None else None
    await store.kv_put(TOKENS, token, {"request_id": request_id, "handle": handle}, expires)
    await store.kv_put(BY_RECIPIENT, key, {"token": token}, expires)
    return DecisionToken(token, request_id, handle)


async def peek(store: Store, token: str, now: datetime | None = None) -> DecisionToken | None:
    """The token's request and handle without spending it; None for a malformed, forged,
    spent or forgotten one."""
    if not TOKEN_RE.fullmatch(token):
        return None
    found = await store.kv_get(TOKENS, token, now)
    if found is None:
        return None
    request_id, handle = found.get("request_id"), found.get("handle")
    if not isinstance(request_id, str) or not isinstance(handle, str):
        return None
    return DecisionToken(token, request_id, handle)


async def spend(store: Store, token: str, now: datetime | None = None) -> DecisionToken | None:
    """Claim the token: its request and handle for the one caller that spends it, None for
    everyone else (a replay, a second replica racing, a forged or malformed token)."""
    found = await peek(store, token, now)
    if found is None or not await store.kv_delete(TOKENS, token):
        return None
    return found
