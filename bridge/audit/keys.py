"""The keys that sign receipts: Ed25519, generated once, kept in the store like other secrets.

Each key is one entry of the store's `receipt_keys` namespace: its public JWK in clear (published
at `/.well-known/jwks.json`, for as long as the store keeps it, so old receipts still verify)
and its private JWK sealed with `secrets.key` (`bridge.crypto.SecretBox`). The newest key whose
private half opens signs; `hitl-bridge keys rotate` adds a newer one. Without `secrets.key` a
private key cannot be opened after a restart: the bridge then makes a new one (its public
half joins the others) and says so in the log. Every replica reads the same entries; a
signing replica notices a rotation within `REFRESH_S`.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from joserfc.jwk import OKPKey

from bridge.crypto import SecretBox, SecretLost
from bridge.ports import Clock
from bridge.store.base import Store

log = logging.getLogger("hitl_bridge.receipts")

NAMESPACE = "receipt_keys"
ALG = "EdDSA"  # RFC 8037 with Ed25519: what every JOSE library reads (RFC 9864's "Ed25519" is too new for many)
REFRESH_S = 30.0
# joserfc warns that RFC 9864 deprecates "EdDSA" in favour of "Ed25519"; verifiers in the field
# (PyJWT, jose, go-jose) still read "EdDSA" only or first
warnings.filterwarnings("ignore", message="EdDSA is deprecated", module="joserfc")


@dataclass(frozen=True)
class SigningKey:
    kid: str
    key: OKPKey


def public_jwk(key: OKPKey, kid: str) -> dict[str, Any]:
    return {**key.as_dict(private=False), "kid": kid, "alg": ALG, "use": "sig"}


class ReceiptKeys:
    """The receipt keys of one store (see the module docstring)."""

    def __init__(self, store: Store, secrets: SecretBox, clock: Clock) -> None:
        self.store = store
        self.secrets = secrets
        self.clock = clock
        self._current: SigningKey | None = None
        self._read_at = float("-inf")

    async def signing_key(self) -> SigningKey:
        """The newest key this process can sign with (made when there is none)."""
        if self._current is not None and time.monotonic() - self._read_at < REFRESH_S:
            return self._current
        entries = sorted(await self.store.kv_items(NAMESPACE), key=lambda item: str(item[1].get("created_at")))
        for kid, entry in reversed(entries):
            try:
                private = self.secrets.open(entry.get("private"))
                key = OKPKey.import_key(private)
            except (SecretLost, ValueError, TypeError):
                log.warning("receipt key %s cannot be opened here (no secrets.key, or another one): making a "
                            "new key; receipts signed with it still verify", kid)
                break
            self._current, self._read_at = SigningKey(kid, key), time.monotonic()
            return self._current
        return await self.rotate()

    async def rotate(self) -> SigningKey:
        """Make a new key and sign with it from now on (older keys stay published)."""
        key = OKPKey.generate_key("Ed25519")
        kid = key.thumbprint()
        now: datetime = self.clock.now()
        await self.store.kv_put(NAMESPACE, kid, {
            "created_at": now.isoformat(), "public": public_jwk(key, kid),
            "private": self.secrets.seal(key.as_dict(private=True)),
        })
        if not self.secrets.persistent:
            log.warning("receipt key %s is sealed with a key that lives only as long as this process (set "
                        "secrets.key to keep it across restarts)", kid)
        self._current, self._read_at = SigningKey(kid, key), time.monotonic()
        return self._current

    async def jwks(self) -> dict[str, Any]:
        """Every public key, newest first: `{"keys": [...]}` (RFC 7517)."""
        entries = sorted(await self.store.kv_items(NAMESPACE), key=lambda item: str(item[1].get("created_at")),
                         reverse=True)
        return {"keys": [entry["public"] for _kid, entry in entries if isinstance(entry.get("public"), dict)]}
