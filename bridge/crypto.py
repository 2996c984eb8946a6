"""Secret answers at rest: Fernet with `secrets.key`, or an in-memory key when none is set
(then a secret survives only until it is delivered or the process ends)."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from cryptography.fernet import Fernet, InvalidToken

MARK = "$secret"


class SecretLost(Exception):
    """A secret answer can no longer be read (no key configured and the daemon restarted)."""


class SecretBox:
    def __init__(self, key: str | None) -> None:
        self.persistent = key is not None
        self._fernet = Fernet(_fernet_key(key) if key else Fernet.generate_key())

    def seal(self, value: Any) -> dict[str, str]:
        import json

        token = self._fernet.encrypt(json.dumps(value).encode()).decode()
        return {MARK: token}

    def open(self, sealed: Any) -> Any:
        import json

        if not is_sealed(sealed):
            return sealed
        try:
            return json.loads(self._fernet.decrypt(sealed[MARK].encode()))
        except InvalidToken:
            raise SecretLost(
                "the secret answer cannot be decrypted (no secrets.key configured and the "
                "daemon restarted, or the key changed); ask again"
            ) from None


def is_sealed(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {MARK}


def _fernet_key(key: str) -> bytes:
    """Accept a Fernet key as is; derive one from any other passphrase."""
    try:
        raw = base64.urlsafe_b64decode(key.encode())
        if len(raw) == 32:
            return key.encode()
    except (ValueError, TypeError):
        pass
    return base64.urlsafe_b64encode(hashlib.sha256(key.encode()).digest())
