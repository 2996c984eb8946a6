"""A `secrets.key` passphrase goes through scrypt with a random salt kept in each sealed
value; values sealed under the old unsalted SHA-256 key are still read; Fernet keys are
used as they are."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sqlite3
from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet

from bridge.crypto import MARK, SecretBox, SecretLost
from tests.harness import callback_receiver, running_bridge, wait_for

PASSPHRASE = "correct horse battery staple"
SECRET_ANSWER = "hunter2-the-db-password"


def legacy_seal(passphrase: str, value: object) -> dict[str, str]:
    """What the bridge wrote before the KDF: Fernet under SHA-256(passphrase)."""
    key = base64.urlsafe_b64encode(hashlib.sha256(passphrase.encode()).digest())
    return {MARK: Fernet(key).encrypt(json.dumps(value).encode()).decode()}


def test_passphrases_get_a_salted_scrypt_key_that_every_replica_can_open() -> None:
    one, two = SecretBox(PASSPHRASE), SecretBox(PASSPHRASE)
    sealed_one, sealed_two = one.seal(SECRET_ANSWER), two.seal(SECRET_ANSWER)
    tag, salt_one, _token = sealed_one[MARK].split(":")
    assert tag == "scrypt1" and len(base64.urlsafe_b64decode(salt_one + "==")) == 16
    assert salt_one != sealed_two[MARK].split(":")[1]  # each process its own salt
    assert two.open(sealed_one) == one.open(sealed_two) == SECRET_ANSWER
    assert one.open(legacy_seal(PASSPHRASE, SECRET_ANSWER)) == SECRET_ANSWER  # data from before
    with pytest.raises(SecretLost):
        SecretBox("another passphrase").open(sealed_one)
    salt_text = sealed_one[MARK].split(":")[1]
    for broken in (sealed_one[MARK].replace(salt_text, "A" * 22), "scrypt1:%%%:x", "scrypt1:", "garbage"):
        with pytest.raises(SecretLost):
            one.open({MARK: broken})


def test_fernet_keys_are_used_as_they_are() -> None:
    key = Fernet.generate_key().decode()
    sealed = SecretBox(key).seal(SECRET_ANSWER)
    assert ":" not in sealed[MARK]
    assert Fernet(key.encode()).decrypt(sealed[MARK].encode()) == json.dumps(SECRET_ANSWER).encode()
    assert SecretBox(key).open(sealed) == SECRET_ANSWER


def stored_bodies(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return "\n".join(row[0] for row in conn.execute("SELECT body FROM requests"))


async def test_secret_answers_at_rest_and_from_before_the_upgrade(tmp_path: Path) -> None:
    """Through the daemon and its SQLite file: a new secret is sealed with scrypt; one sealed
    the old way (as an older bridge left it in the store) is still delivered after a restart."""
    config = {"secrets": {"key": PASSPHRASE}, "delivery": {"first_retry": "20ms", "max_backoff": "100ms"}}
    db = tmp_path / "bridge.db"
    async with callback_receiver() as rx:
        rx.down = True  # keep the answer waiting in the outbox
        async with running_bridge(tmp_path, config) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as api:
            rid = (await api.post("/v1/requests", json={
                "title": "Database password", "callback": {"url": rx.url, "secret": "whsec-0123456789abcdef"},
                "questions": [{"id": "pw", "kind": "secret", "prompt": "Password?"}]})).json()["id"]
            assert (await api.post(f"/v1/requests/{rid}/answer", json={"value": SECRET_ANSWER})).status_code == 200
            await wait_for(lambda: rx.refused > 0)
        at_rest = stored_bodies(db)
        assert SECRET_ANSWER not in at_rest and re.search(r'"\$secret": ?"scrypt1:', at_rest)
        with sqlite3.connect(db) as conn:  # turn the stored value into one an older bridge wrote
            (raw,) = conn.execute("SELECT body FROM requests WHERE id=?", (rid,)).fetchone()
            body = json.loads(raw)
            body["answer"]["values"]["pw"] = legacy_seal(PASSPHRASE, SECRET_ANSWER)
            conn.execute("UPDATE requests SET body=? WHERE id=?", (json.dumps(body), rid))
        assert "scrypt1:" not in stored_bodies(db)
        rx.down = False
        async with running_bridge(tmp_path, config):
            got = await wait_for(lambda: rx.received)
        assert json.loads(got[0].body)["answer"]["values"]["pw"] == SECRET_ANSWER
