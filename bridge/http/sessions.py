"""Browser sessions kept in the store, so logging out ends a session everywhere (every
replica reads the same rows) and a copied cookie stops working the moment it is ended.

The cookie holds only a random id (256 bits); the store holds the SHA-256 of that id, the
identity and an expiry, so someone who reads the database cannot log in with it.
`scope` tags the sessions of one set of credentials: the web inbox ends the sessions of
an older password or token list by reading with its own scope.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from bridge.store.base import Store

SESSION_COOKIE = "hitl_session"
NAMESPACE = "sessions"
PREFIX = "s1."
MAX_COOKIE_CHARS = 200


def _key(cookie: str) -> str | None:
    if not cookie.startswith(PREFIX) or len(cookie) > MAX_COOKIE_CHARS:
        return None
    return hashlib.sha256(cookie.encode()).hexdigest()


class Sessions:
    def __init__(self, store: Store, scope: str = "") -> None:
        self.store = store
        self.scope = scope

    async def start(self, identity: str, ttl_s: int, **about: str) -> str:
        """A new session for `identity` (with small facts `about` it, read back by `read`);
        returns the cookie value."""
        cookie = PREFIX + secrets.token_urlsafe(32)
        expires = datetime.now(UTC) + timedelta(seconds=ttl_s)
        await self.store.kv_put(NAMESPACE, _key(cookie) or "", {**about, "u": identity, "scope": self.scope},
                                expires_at=expires)
        return cookie

    async def read(self, cookie: str | None) -> dict[str, object] | None:
        """The live session of this scope (`u`: the identity, and what `start` was told)."""
        row = await session_row(self.store, cookie)
        if row is None or row.get("scope") != self.scope or not isinstance(row.get("u"), str):
            return None
        return row

    async def identity(self, cookie: str | None) -> str | None:
        """Who the live session of this scope belongs to; None for anything else."""
        row = await self.read(cookie)
        return str(row["u"]) if row is not None else None

    async def end(self, cookie: str | None) -> bool:
        key = _key(cookie or "")
        return key is not None and await self.store.kv_delete(NAMESPACE, key)


async def session_row(store: Store, cookie: str | None) -> dict[str, object] | None:
    """The stored session for a cookie value, if it is live (any scope)."""
    key = _key(cookie or "")
    if key is None:
        return None
    return await store.kv_get(NAMESPACE, key, now=datetime.now(UTC))
