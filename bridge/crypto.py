"""Secret answers at rest: Fernet with `secrets.key`, or an in-memory key when none is set
(then a secret survives only until it is delivered or the process ends).

`secrets.key` is either a Fernet key (used as is) or a passphrase. A passphrase goes through
scrypt with a random salt; the salt travels inside each sealed value
(`scrypt1:<salt>:<Fernet token>`), so every replica that has the passphrase can open what
any other sealed, with nothing else to share. Values sealed before this (Fernet tokens
under the old unsalted SHA-256 key) are still read.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

MARK = "$secret"
KDF_TAG = "scrypt1"
SALT_BYTES = 16
#: scrypt cost: 2**15 × 8 × 128 B = 32 MiB and ~0.1 s per derivation, done once per salt per
#: process (a guess at the passphrase costs an attacker the same)
SCRYPT_N = 2**15
SCRYPT_R = 8
SCRYPT_P = 1


class SecretLost(Exception):
    """A secret answer can no longer be read (no key configured and the daemon restarted)."""


class SecretBox:
    def __init__(self, key: str | None) -> None:
        self.persistent = key is not None
        self._passphrase: str | None = None
        self._fernet: Fernet | None = None
        self._salt: bytes | None = None
        if key is None:
            self._fernet = Fernet(Fernet.generate_key())
        elif is_fernet_key(key):
            self._fernet = Fernet(key.encode())
        else:
            self._passphrase = key

    def seal(self, value: Any) -> dict[str, str]:
        data = json.dumps(value).encode()
        if self._passphrase is None:
            assert self._fernet is not None
            return {MARK: self._fernet.encrypt(data).decode()}
        if self._salt is None:
            self._salt = os.urandom(SALT_BYTES)  # one per process: one scrypt, not one per value
        salt = base64.urlsafe_b64encode(self._salt).decode().rstrip("=")
        token = _scrypt_fernet(self._passphrase, self._salt).encrypt(data).decode()
        return {MARK: f"{KDF_TAG}:{salt}:{token}"}

    def open(self, sealed: Any) -> Any:
        if not is_sealed(sealed):
            return sealed
        try:
            return json.loads(self._decrypt(str(sealed[MARK])))
        except (InvalidToken, ValueError):
            raise SecretLost(
                "the secret answer cannot be decrypted (no secrets.key configured and the "
                "daemon restarted, or the key changed); ask again"
            ) from None

    def _decrypt(self, text: str) -> bytes:
        if self._passphrase is None:
            assert self._fernet is not None
            return self._fernet.decrypt(text.encode())
        tag, sep, rest = text.partition(":")
        if sep and tag == KDF_TAG:
            salt_text, _, token = rest.partition(":")
            salt = base64.urlsafe_b64decode(salt_text + "=" * (-len(salt_text) % 4))
            if len(salt) != SALT_BYTES:
                raise ValueError("bad salt")
            return _scrypt_fernet(self._passphrase, salt).decrypt(token.encode())
        return Fernet(_legacy_key(self._passphrase)).decrypt(text.encode())  # sealed before scrypt


def is_sealed(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {MARK}


def is_fernet_key(key: str) -> bool:
    try:
        return len(base64.urlsafe_b64decode(key.encode())) == 32
    except (ValueError, TypeError):
        return False


def derive_key(passphrase: str, purpose: bytes) -> bytes:
    """32 bytes from a passphrase for an in-process key (session signing...): scrypt with
    `purpose` as the salt, so each use gets its own key and guesses stay expensive."""
    return _scrypt(passphrase, hashlib.sha256(b"hitl-bridge\0" + purpose).digest()[:SALT_BYTES])


@functools.lru_cache(maxsize=64)
def _scrypt(passphrase: str, salt: bytes) -> bytes:
    return Scrypt(salt=salt, length=32, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P).derive(passphrase.encode())


def _scrypt_fernet(passphrase: str, salt: bytes) -> Fernet:
    return Fernet(base64.urlsafe_b64encode(_scrypt(passphrase, salt)))


def _legacy_key(passphrase: str) -> bytes:
    """The key of values sealed before the scrypt KDF: one unsalted SHA-256 (read only)."""
    return base64.urlsafe_b64encode(hashlib.sha256(passphrase.encode()).digest())
