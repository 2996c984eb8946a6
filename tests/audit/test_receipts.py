"""Signed receipts: the callback carries a compact JWS (EdDSA) that the Python client and an
independent JOSE library (PyJWT) verify with /.well-known/jwks.json; an altered, forged or
malformed receipt is refused; a rotated key signs the next receipt while the old one still
verifies. No secret in a receipt."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from hitl_bridge_client import BadReceipt, verify_receipt
from joserfc import jws
from joserfc.jwk import OKPKey

from bridge import cli as hitl
from bridge.audit import keys as receipt_keys
from tests.harness import CallbackReceiver, callback_receiver, running_bridge, wait_for

SECRET = "correct horse battery staple"
CONFIG = {"secrets": {"key": "a passphrase that seals the receipt keys"}}
QUESTIONS = [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}, {"id": "pw", "kind": "secret", "prompt": "Code"}]


async def decided(client: httpx.AsyncClient, receiver: CallbackReceiver, title: str) -> dict[str, Any]:
    """A request answered through the API; the callback body it got."""
    before = len(receiver.received)
    r = await client.post("/v1/requests", json={"title": title, "questions": QUESTIONS,
                                                "callback": {"url": receiver.url, "secret": "s" * 32}})
    assert r.status_code == 201, r.text
    rid = r.json()["id"]
    r = await client.post(f"/v1/requests/{rid}/answer", json={"values": {"ok": "yes", "pw": SECRET},
                                                              "responder": "ana"})
    assert r.status_code == 200, r.text
    await wait_for(lambda: len(receiver.received) > before)
    body: dict[str, Any] = json.loads(receiver.received[-1].body)
    assert body["request_id"] == rid
    return body


def b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def enc(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


async def test_a_callback_carries_a_receipt_both_libraries_verify(tmp_path: Path) -> None:
    async with callback_receiver() as receiver, running_bridge(tmp_path, CONFIG) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        body = await decided(client, receiver, "Deploy api 2.3?")
        keys = (await client.get("/.well-known/jwks.json")).json()
        claims = await asyncio.to_thread(verify_receipt, body["receipt"], bridge.base_url)  # fetches the JWKS
    receipt = body["receipt"]
    assert SECRET not in receipt and SECRET not in json.dumps(claims)
    assert claims["sub"] == body["request_id"] and claims["state"] == "answered"
    assert claims["values"] == {"ok": "yes", "pw": "[secret]"}
    assert claims["by"]["handle"] == "api:local" and claims["via"] == "api"
    asked = {"title": "Deploy api 2.3?", "questions": [
        {"id": "ok", "kind": "confirm", "prompt": "Deploy?"}, {"id": "pw", "kind": "secret", "prompt": "Code"}]}
    assert len(claims["question_sha256"]) == 64  # over the stored questions (defaults filled in)
    assert claims["question_sha256"] != hashlib.sha256(json.dumps(asked).encode()).hexdigest()
    assert verify_receipt(receipt, keys) == claims == verify_receipt(receipt, json.dumps(keys))
    header = jwt.get_unverified_header(receipt)
    assert header["alg"] == "EdDSA" and header["kid"] in {k["kid"] for k in keys["keys"]}
    public = jwt.PyJWKSet.from_dict(keys)[header["kid"]]
    assert jwt.PyJWS().decode(receipt, key=public, algorithms=["EdDSA"]) == json.dumps(
        claims, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


async def test_altered_forged_and_malformed_receipts_are_refused(tmp_path: Path) -> None:
    async with callback_receiver() as receiver, running_bridge(tmp_path, CONFIG) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        receipt = (await decided(client, receiver, "Drop the table?"))["receipt"]
        keys = (await client.get("/.well-known/jwks.json")).json()
    head, payload, signature = receipt.split(".")
    claims = json.loads(b64(payload))
    altered = enc(json.dumps({**claims, "values": {"ok": "no", "pw": "[secret]"}}).encode())
    other = OKPKey.generate_key("Ed25519")
    header = json.loads(b64(head))
    forged = jws.serialize_compact(header, b64(payload), other, algorithms=["EdDSA"])  # same kid, wrong key
    unsigned = enc(json.dumps({"alg": "none", "kid": header["kid"]}).encode()) + "." + payload + "."
    hmac_forged = jws.serialize_compact({"alg": "HS256", "kid": header["kid"]}, b64(payload),
                                        __import__("joserfc.jwk", fromlist=["OctKey"]).OctKey.import_key(
                                            "k" * 32), algorithms=["HS256"])
    for bad in (f"{head}.{altered}.{signature}", forged, unsigned, hmac_forged, receipt[:-3] + "AAA",
                "", "a.b", "not a jws at all", "x" * 20_000 + ".a.b", f"{head}.{payload}.{signature}.extra"):
        with pytest.raises(BadReceipt):
            verify_receipt(bad, keys)
        with pytest.raises(jwt.PyJWTError):
            jwt.PyJWS().decode(bad, key=jwt.PyJWKSet.from_dict(keys)[header["kid"]], algorithms=["EdDSA"])
    with pytest.raises(BadReceipt):
        verify_receipt(receipt, {"keys": [{**other.as_dict(private=False), "kid": header["kid"]}]})
    with pytest.raises(BadReceipt):
        verify_receipt(receipt, {"keys": "nope"})
    with pytest.raises(BadReceipt):
        verify_receipt(123, keys)  # type: ignore[arg-type]


async def test_rotation_signs_with_a_new_kid_and_old_receipts_still_verify(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(receipt_keys, "REFRESH_S", 0.0)  # the daemon reads the keys at each receipt
    config = tmp_path / "admin.yaml"
    config.write_text(json.dumps({"store": {"url": f"sqlite:///{tmp_path}/bridge.db"}, **CONFIG}))
    async with callback_receiver() as receiver, running_bridge(tmp_path, CONFIG) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        old = (await decided(client, receiver, "First?"))["receipt"]
        capsys.readouterr()
        assert await asyncio.to_thread(hitl.run, ["-c", str(config), "keys", "rotate", "--json"]) == 0
        kid = json.loads(capsys.readouterr().out)["kid"]
        new = (await decided(client, receiver, "Second?"))["receipt"]
        keys = (await client.get("/.well-known/jwks.json")).json()
    assert jwt.get_unverified_header(new)["kid"] == kid != jwt.get_unverified_header(old)["kid"]
    assert keys["keys"][0]["kid"] == kid and len(keys["keys"]) == 2
    assert verify_receipt(old, keys)["sub"] != verify_receipt(new, keys)["sub"]
    assert all("d" not in k for k in keys["keys"])  # public halves only


async def test_the_receipt_route_is_for_the_creator_and_closed_requests_only(tmp_path: Path) -> None:
    tokens = {"http": {"api_tokens": {"ci": "ci-token-0123456789abcdef", "other": "other-token-0123456789abcd",
                                      "auditor": {"token": "audit-token-0123456789abcd", "audit": True}}}}
    ci, other, auditor = ({"Authorization": f"Bearer {t}"} for t in (
        "ci-token-0123456789abcdef", "other-token-0123456789abcd", "audit-token-0123456789abcd"))
    async with running_bridge(tmp_path, {**tokens, **CONFIG}) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        r = await client.post("/v1/requests", headers=ci, json={"title": "Go?", "questions": QUESTIONS[:1]})
        rid = r.json()["id"]
        assert (await client.get(f"/v1/requests/{rid}/receipt", headers=ci)).status_code == 409  # still open
        await client.post(f"/v1/requests/{rid}/answer", headers=ci, json={"value": "no"})
        assert (await client.get(f"/v1/requests/{rid}/receipt")).status_code == 401
        assert (await client.get(f"/v1/requests/{rid}/receipt", headers=other)).status_code == 403
        assert (await client.get("/v1/requests/r_nope/receipt", headers=ci)).status_code == 404
        assert (await client.get(f"/v1/requests/{'x' * 5000}/receipt", headers=ci)).status_code in (404, 414)
        mine = (await client.get(f"/v1/requests/{rid}/receipt", headers=ci)).json()["receipt"]
        audited = (await client.get(f"/v1/requests/{rid}/receipt", headers=auditor)).json()["receipt"]
        keys = (await client.get("/.well-known/jwks.json")).json()
    assert verify_receipt(mine, keys) == verify_receipt(audited, keys)
    claims = verify_receipt(mine, keys)
    assert claims["values"] == {"ok": "no"} and claims["by"]["handle"] == "api:ci"
