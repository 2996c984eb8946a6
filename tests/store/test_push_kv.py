"""What the phone channels keep in the store's key/value space, on SQLite and PostgreSQL:
the VAPID key pair (made once, sealed), each login's push devices, and one-use decision
tokens (spent by exactly one of several racing callers)."""

from __future__ import annotations

import asyncio
import base64
import json

from adapters.push.subscriptions import BadSubscription, Devices, parse_subscription
from adapters.push.vapid import NAMESPACE, load_or_make
from bridge.action_tokens import peek, spend, token_for
from bridge.crypto import SecretBox
from bridge.store import Store
from tests.store.conftest import Backend
from tests.store.helpers import at

KEY = "a passphrase long enough for tests"
P256 = base64.urlsafe_b64encode(b"\x04" + b"\x01" * 64).decode().rstrip("=")
AUTH = base64.urlsafe_b64encode(b"\x02" * 16).decode().rstrip("=")


def subscription(n: int) -> dict[str, object]:
    return {"endpoint": f"https://fcm.googleapis.com/fcm/send/device-{n}", "keys": {"p256dh": P256, "auth": AUTH}}


async def test_the_vapid_key_is_made_once_and_kept_sealed(backend: Backend) -> None:
    store = await backend.open_store()
    try:
        first = await load_or_make(store, SecretBox(KEY))
        stored = json.dumps(await store.kv_get(NAMESPACE, "pair"))
        assert first.fresh and "PRIVATE KEY" not in stored  # sealed, never in clear
    finally:
        await store.close()
    reopened = await backend.open_store()
    try:
        again = await load_or_make(reopened, SecretBox(KEY))
        assert not again.fresh and again.public_key == first.public_key
        other_key = await load_or_make(reopened, SecretBox("another passphrase entirely"))
        assert other_key.fresh and other_key.public_key != first.public_key  # cannot be opened: a new pair
    finally:
        await reopened.close()


async def test_devices_are_kept_per_login(store: Store) -> None:
    devices = Devices(store)
    services = ["fcm.googleapis.com"]
    for n in (1, 2):
        await devices.add(parse_subscription(subscription(n), "ana", services, added="t"), limit=2)
    await devices.add(parse_subscription(subscription(2), "ana", services, added="again"), limit=2)  # same device
    await devices.add(parse_subscription(subscription(3), "bo", services, added="t"), limit=2)
    assert sorted(d.endpoint[-1] for d in await devices.of("ana")) == ["1", "2"]
    try:
        await devices.add(parse_subscription(subscription(4), "ana", services, added="t"), limit=2)
    except BadSubscription as exc:
        assert "2 devices" in str(exc)
    else:
        raise AssertionError("a third device was accepted past the limit")
    bo = (await devices.of("bo"))[0]
    assert not await devices.remove("ana", bo.key)  # ana cannot turn bo's device off
    ana = (await devices.of("ana"))[0]
    await devices.drop(ana, 410, at(0))
    assert len(await devices.of("ana")) == 1
    assert [g["status"] for g in await devices.gone(at(1), "ana")] == [410]
    assert await devices.gone(at(1), "bo") == []


async def test_a_decision_token_is_spent_once(store: Store) -> None:
    token = await token_for(store, "r1", "push:ana", deadline=None)
    assert await token_for(store, "r1", "push:ana", deadline=None) == token  # the same until spent
    assert await token_for(store, "r1", "push:bo", deadline=None) != token
    assert await peek(store, token.token) == token
    won = await asyncio.gather(*(spend(store, token.token) for _ in range(5)))
    assert [w for w in won if w is not None] == [token]  # one caller of five
    assert await peek(store, token.token) is None and await spend(store, token.token) is None
    assert await spend(store, "x" * 43) is None and await spend(store, "../../etc") is None
