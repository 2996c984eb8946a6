"""The daemon's VAPID key pair (RFC 8292): made once, on the first start with a `push:`
section, and kept in the store sealed like other secrets (bridge.crypto), so every replica
and every restart signs with the same key and the browsers' subscriptions stay valid.

Without `secrets.key` the sealing key lives only in memory: after a restart the stored pair
cannot be opened, a new one is made, and the subscriptions made for the old one are
dropped (they would be refused by the push services anyway); doctor says so.
"""

from __future__ import annotations

import base64
import logging

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from py_vapid import Vapid

from bridge.crypto import SecretBox, SecretLost
from bridge.store.base import Store

log = logging.getLogger("hitl_bridge.push")
NAMESPACE = "push-vapid"
KEY = "pair"


class VapidKeys:
    """The signing key and its public half as browsers want it (`applicationServerKey`)."""

    def __init__(self, vapid: Vapid, fresh: bool) -> None:
        self.vapid = vapid
        self.fresh = fresh  # made on this start (the old subscriptions no longer match)

    @property
    def public_key(self) -> str:
        """The uncompressed P-256 point, base64url without padding."""
        raw = self.vapid.public_key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")


async def load_or_make(store: Store, box: SecretBox) -> VapidKeys:
    """The stored pair, or a new one stored for next time."""
    found = await store.kv_get(NAMESPACE, KEY)
    if found is not None:
        try:
            pem = box.open(found.get("private_pem"))
            if isinstance(pem, str):
                return VapidKeys(Vapid.from_pem(pem.encode()), fresh=False)
        except SecretLost:
            log.warning("push: the stored VAPID key cannot be opened (no secrets.key and the daemon restarted, "
                        "or the key changed): making a new one; every device must turn notifications on again")
    vapid = Vapid()
    vapid.generate_keys()
    pem = vapid.private_pem().decode()
    await store.kv_put(NAMESPACE, KEY, {"private_pem": box.seal(pem)})
    stored = await store.kv_get(NAMESPACE, KEY)  # another replica may have made one at the same time:
    try:  # the last one written is everyone's
        other = box.open(stored.get("private_pem")) if stored is not None else pem
    except SecretLost:
        other = pem
    if isinstance(other, str) and other != pem:
        return VapidKeys(Vapid.from_pem(other.encode()), fresh=True)
    return VapidKeys(vapid, fresh=True)
