"""Callbacks signed the Standard Webhooks way (opt-in per request or per source), checked
by the off-the-shelf `standardwebhooks` receiver; `verify_callback` accepting both ways
and refusing forged, replayed and hostile headers."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from hitl_bridge_client import standard_secret, verify_callback
from hitl_bridge_client.signing import sign_standard, signature_headers
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from bridge.errors import ConfigError
from tests.harness import callback_receiver, running_bridge, wait_for

WHSEC = "whsec_" + base64.b64encode(bytes(range(32))).decode()
PLAIN = "plain-secret-0123456789"
FAST_RETRY = {"delivery": {"first_retry": "20ms", "max_backoff": "100ms"}}


def body(url: str, secret: str, signing: str | None = None) -> dict[str, Any]:
    callback = {"url": url, "secret": secret, **({"signing": signing} if signing else {})}
    return {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}], "callback": callback}


async def test_a_request_opts_in_and_an_off_the_shelf_receiver_verifies(tmp_path: Path) -> None:
    async with callback_receiver() as rx, running_bridge(tmp_path, FAST_RETRY) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        rx.down = True  # the first attempt fails: the retry must carry the same webhook-id
        rid = (await client.post("/v1/requests", json=body(rx.url, WHSEC, "standard"))).json()["id"]
        await client.post(f"/v1/requests/{rid}/answer", json={"value": "yes", "responder": "ana"})
        await wait_for(lambda: rx.refused >= 1)
        rx.down = False
        got = (await wait_for(lambda: rx.received))[0]
        payload = Webhook(WHSEC).verify(got.body, got.headers)
        assert payload["request_id"] == rid and payload["answer"]["values"] == {"ok": "yes"}
        assert got.headers["webhook-id"] == f"msg_{rid}_answered"
        assert "x-hitl-signature" not in got.headers and got.headers["x-hitl-event"] == "answered"
        assert verify_callback(WHSEC, got.headers, got.body)
        with pytest.raises(WebhookVerificationError):
            Webhook(WHSEC).verify(got.body.replace(b'"yes"', b'"no"'), got.headers)
        # an operator sends it again: the same message, the same id
        await wait_for(lambda: _state(client, rid, "delivered"))
        assert (await client.post(f"/v1/requests/{rid}/redeliver")).status_code == 200
        again = (await wait_for(lambda: rx.received[1:]))[0]
        assert again.headers["webhook-id"] == got.headers["webhook-id"]
        Webhook(WHSEC).verify(again.body, again.headers)


async def test_a_source_opts_in_with_a_plain_secret_and_a_request_can_opt_out(tmp_path: Path) -> None:
    config = {"sources": [{"type": "webhook", "signing": "standard"}]}
    async with callback_receiver() as rx, running_bridge(tmp_path, config) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        first = (await client.post("/v1/requests", json=body(rx.url, PLAIN))).json()["id"]
        await client.post(f"/v1/requests/{first}/cancel", json={"reason": "superseded"})
        got = (await wait_for(lambda: rx.received))[0]
        # a plain secret is the key's raw bytes: the whsec_ form of it, or the bytes themselves
        assert Webhook(standard_secret(PLAIN)).verify(got.body, got.headers)["state"] == "cancelled"
        assert Webhook(PLAIN.encode()).verify(got.body, got.headers)["reason"] == "superseded"
        assert verify_callback(PLAIN, got.headers, got.body)
        assert verify_callback(standard_secret(PLAIN), got.headers, got.body)  # 23 bytes: any length verifies
        assert got.headers["webhook-id"] == f"msg_{first}_cancelled"
        second = (await client.post("/v1/requests", json=body(rx.url, PLAIN, "hitl"))).json()["id"]
        await client.post(f"/v1/requests/{second}/answer", json={"value": "no"})
        hitl = (await wait_for(lambda: rx.received[1:]))[0]
        assert "webhook-signature" not in hitl.headers and hitl.headers["x-hitl-signature"].startswith("v1=")
        assert verify_callback(PLAIN, hitl.headers, hitl.body)
        assert not verify_callback("another-secret-0123456", hitl.headers, hitl.body)


async def test_the_structured_format_opts_in_too(tmp_path: Path) -> None:
    async with callback_receiver() as rx, running_bridge(tmp_path) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        structured = {"request_id": "q-1", "objective": "Pick", "questions": [
            {"id": "env", "question": "Which?", "input_type": "selection", "options": ["a", "b"]}],
            "callback": {"url": rx.url, "secret": WHSEC, "signing": "standard"}}
        rid = (await client.post("/v1/requests", json=structured)).json()["id"]
        await client.post(f"/v1/requests/{rid}/answer", json={"value": "b"})
        got = (await wait_for(lambda: rx.received))[0]
        assert Webhook(WHSEC).verify(got.body, got.headers)["answers"] == {"env": "b"}


async def test_bad_signing_options_are_refused_at_intake(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        short = "whsec_" + base64.b64encode(b"k" * 12).decode()
        for secret, said in ((short, "24 to 64 bytes, this one holds 12"), ("whsec_not*base64!!", "base64")):
            refused = await client.post("/v1/requests", json=body("http://127.0.0.1:9/hook", secret, "standard"))
            assert refused.status_code == 422 and "callback.secret" in refused.text and said in refused.text
        refused = await client.post("/v1/requests", json=body("http://127.0.0.1:9/hook", PLAIN, "svix"))
        assert refused.status_code == 422 and "callback.signing" in refused.text
        assert await bridge.store.list_requests() == []


async def test_a_bad_source_signing_stops_the_daemon_with_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"sources\[0\]\.signing: Input should be 'hitl' or 'standard'"):
        async with running_bridge(tmp_path, {"sources": [{"type": "webhook", "signing": "hmac"}]}):
            pass


def test_our_signature_is_the_standard_one() -> None:
    data = b'{"request_id":"r_1","state":"answered"}'
    stamp = 1_790_000_000
    theirs = Webhook(WHSEC).sign("msg_1", datetime.fromtimestamp(stamp, UTC), data.decode())
    assert sign_standard(WHSEC, "msg_1", stamp, data) == theirs
    unpadded = WHSEC.rstrip("=")
    assert sign_standard(unpadded, "msg_1", stamp, data) == theirs


@pytest.mark.parametrize("scheme", ["hitl", "standard"])
def test_verify_callback_refuses_forged_replayed_and_hostile_headers(scheme: str) -> None:
    data = b'{"request_id":"r_1"}'
    now = time.time()
    headers = signature_headers(scheme, WHSEC, data, "msg_r_1_answered", int(now))
    assert verify_callback(WHSEC, headers, data, now=now)
    assert verify_callback(WHSEC, {k.upper(): v for k, v in headers.items()}, data, now=now)
    sig = "webhook-signature" if scheme == "standard" else "X-Hitl-Signature"
    stamp = "webhook-timestamp" if scheme == "standard" else "X-Hitl-Timestamp"
    assert not verify_callback(WHSEC + "x", headers, data, now=now)                      # another secret
    assert not verify_callback(WHSEC, headers, data + b" ", now=now)                      # a changed body
    assert not verify_callback(WHSEC, headers, data, now=now + 301)                       # a replay
    assert not verify_callback(WHSEC, headers, data, now=now - 301)                       # from the future
    assert verify_callback(WHSEC, headers, data, now=now + 600, tolerance_s=900)
    for hostile in ("", "v1=", "v1,", "ünïcödé-Ω", "v1," + "A" * 10_000, "\x00"):
        assert not verify_callback(WHSEC, {**headers, sig: hostile}, data, now=now)
    for stamp_value in ("", "soon", "1e99", "-1", str(2**80)):
        assert not verify_callback(WHSEC, {**headers, stamp: stamp_value}, data, now=now)
    assert not verify_callback(WHSEC, {k: v for k, v in headers.items() if k != sig}, data, now=now)
    assert not verify_callback(WHSEC, {}, data, now=now)


def test_standard_signatures_rotate_and_bind_the_message_id() -> None:
    data = b"{}"
    now = int(time.time())
    headers = signature_headers("standard", WHSEC, data, "msg_a", now)
    old = signature_headers("standard", PLAIN, data, "msg_a", now)["webhook-signature"]
    rotating = {**headers, "webhook-signature": f"{old} v1a,xyz {headers['webhook-signature']}"}
    assert verify_callback(WHSEC, rotating, data) and verify_callback(PLAIN, rotating, data)
    assert not verify_callback(WHSEC, {**headers, "webhook-id": "msg_b"}, data)
    assert not verify_callback(WHSEC, {**headers, "webhook-id": ""}, data)
    for broken in ("whsec_***", "whsec_"):  # a broken secret is a failed check, not a crash
        assert not verify_callback(broken, headers, data)


async def _state(client: httpx.AsyncClient, rid: str, state: str) -> bool:
    return bool((await client.get(f"/v1/requests/{rid}")).json()["state"] == state)


def test_payload_of_a_signed_callback_is_compact_json() -> None:
    from adapters.webhook.callback import signed_request

    raw, headers = signed_request(PLAIN, {"a": [1, 2]}, "r_9", "expired", "standard")
    assert raw == b'{"a":[1,2]}' and json.loads(raw) == {"a": [1, 2]}
    assert headers["webhook-id"] == "msg_r_9_expired" and headers["X-Hitl-Event"] == "expired"
    with pytest.raises(ValueError, match="unknown signing scheme"):
        signed_request(PLAIN, {}, "r_9", "expired", "rot13")
