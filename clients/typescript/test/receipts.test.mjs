// Signed receipts checked by verifyReceipt (WebCrypto) and by an independent JOSE library (jose),
// against a real daemon's /.well-known/jwks.json; altered, forged and malformed receipts refused.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { compactVerify, createLocalJWKSet, exportJWK, generateKeyPair, CompactSign } from "jose";

import { BadReceipt, Client, verifyReceipt } from "../dist/index.js";
import { answerNext, sharedDaemon, TOKEN } from "./daemon.mjs";

let daemon;
let client;

before(async () => {
  daemon = await sharedDaemon();
  client = new Client({ baseUrl: daemon.url, token: TOKEN });
});
after(async () => {
  await daemon?.stop();
});

async function decidedReceipt(title) {
  const asking = client.ask(title);
  const request = await answerNext(daemon.url, { value: "yes", responder: "ana" }, { title, token: TOKEN });
  await asking;
  const response = await fetch(`${daemon.url}/v1/requests/${request.id}/receipt`,
    { headers: { Authorization: `Bearer ${TOKEN}` } });
  assert.equal(response.status, 200);
  const receipt = (await response.json()).receipt;
  assert.equal(await client.receipt(request.id), receipt); // the same, through the client
  return { id: request.id, receipt };
}

const b64 = (text) => Buffer.from(text).toString("base64url");

describe("receipts", () => {
  test("verifyReceipt and jose agree on a real receipt", async () => {
    const { id, receipt } = await decidedReceipt("Ship the receipts?");
    const jwks = await (await fetch(`${daemon.url}/.well-known/jwks.json`)).json();
    const claims = await verifyReceipt(receipt, daemon.url); // fetches the key set
    assert.equal(claims.sub, id);
    assert.equal(claims.state, "answered");
    assert.deepEqual(claims.values, { ok: "yes" });
    assert.equal(claims.by.handle, "api:tests");
    assert.deepEqual(await verifyReceipt(receipt, jwks), claims);
    assert.deepEqual(await verifyReceipt(receipt, JSON.stringify(jwks)), claims);
    const checked = await compactVerify(receipt, createLocalJWKSet(jwks), { algorithms: ["EdDSA"] });
    assert.deepEqual(JSON.parse(new TextDecoder().decode(checked.payload)), claims);
    assert.equal(checked.protectedHeader.alg, "EdDSA");
  });

  test("altered, forged and malformed receipts are refused by both", async () => {
    const { receipt } = await decidedReceipt("Refuse the forgeries?");
    const jwks = await (await fetch(`${daemon.url}/.well-known/jwks.json`)).json();
    const [head, payload, signature] = receipt.split(".");
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
    const header = JSON.parse(Buffer.from(head, "base64url").toString());
    const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
    const forged = await new CompactSign(Buffer.from(payload, "base64url")).setProtectedHeader(header).sign(privateKey);
    const bad = [
      `${head}.${b64(JSON.stringify({ ...claims, values: { ok: "no" } }))}.${signature}`,
      forged,
      `${b64(JSON.stringify({ alg: "none", kid: header.kid }))}.${payload}.`,
      `${b64(JSON.stringify({ alg: "HS256", kid: header.kid }))}.${payload}.${signature}`,
      receipt.slice(0, -3) + "AAA",
    ];
    for (const receiptText of bad) {
      await assert.rejects(verifyReceipt(receiptText, jwks), BadReceipt, receiptText.slice(0, 40));
      await assert.rejects(compactVerify(receiptText, createLocalJWKSet(jwks), { algorithms: ["EdDSA"] }));
    }
    for (const junk of ["", "a.b", "not a jws", "x".repeat(20_000) + ".a.b", `${receipt}.extra`, 42]) {
      await assert.rejects(verifyReceipt(junk, jwks), BadReceipt);
    }
    const other = { ...(await exportJWK((await generateKeyPair("EdDSA", { crv: "Ed25519" })).publicKey)), kid: header.kid };
    await assert.rejects(verifyReceipt(receipt, { keys: [other] }), BadReceipt);
    await assert.rejects(verifyReceipt(receipt, { keys: "nope" }), BadReceipt);
  });
});
