"""How failed inbox logins slow guessers down without locking people out.

Failures are counted per client address and per name typed, over a window:

- An address that spent its budget is refused (429) whatever it sends. The address is the
  socket's peer (or what a proxy of `http.trusted_proxies` says), so this only ever holds
  back the address that failed.
- A name that spent its budget (failures from any addresses) is refused only from
  addresses where that name has not logged in successfully in the last `KNOWN_FOR`: people
  keep getting in from where they usually log in, while guesses from new addresses wait.
  Someone who types another person's name wrong many times slows that name down for new
  addresses only; they cannot lock its owner out of their own.

A successful login remembers (name, address) in the store, as a keyed hash: every replica
reads it, and it survives a restart. Failure counts live in the process (see
`bridge.http.throttle`).
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta

from bridge.http.throttle import FailureThrottle, client_key
from bridge.store.base import Store

NAMESPACE = "login-known"
KNOWN_FOR = timedelta(days=30)


class LoginThrottle:
    def __init__(self, max_failures: int, window_s: float, key: bytes) -> None:
        self._failures = FailureThrottle(max_failures, window_s)
        self._key = key
        self._store: Store | None = None

    def attach(self, store: Store) -> None:
        self._store = store

    async def refusal(self, address: str, name: str) -> str | None:
        """Why a login from `address` as `name` is not even checked now, or None."""
        if self._failures.blocked(_address(address)):
            return "too many failed logins from this address; wait a few minutes"
        if name and self._failures.blocked(_name(name)) and not await self._known(address, name):
            return ("too many failed logins for this name from other places; wait a few minutes, "
                    "or log in from where you usually do")
        return None

    def failed(self, address: str, name: str) -> None:
        self._failures.fail(_address(address))
        if name:
            self._failures.fail(_name(name))

    async def succeeded(self, address: str, name: str) -> None:
        self._failures.forget(_address(address))
        if name and self._store is not None:
            await self._store.kv_put(NAMESPACE, self._pair(address, name), {},
                                     expires_at=datetime.now(UTC) + KNOWN_FOR)

    async def _known(self, address: str, name: str) -> bool:
        if self._store is None:
            return False
        return await self._store.kv_get(NAMESPACE, self._pair(address, name), now=datetime.now(UTC)) is not None

    def _pair(self, address: str, name: str) -> str:
        """A keyed hash: the store holds no addresses, and a row cannot be forged from outside."""
        text = f"{name.casefold()}\n{client_key(address)}".encode()
        return hmac.new(self._key, text, hashlib.sha256).hexdigest()


def _address(address: str) -> str:
    return "address:" + client_key(address)


def _name(name: str) -> str:
    return "name:" + name.casefold()
