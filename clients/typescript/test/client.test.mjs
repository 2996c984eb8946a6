// The TypeScript client (built: dist/) against a real daemon: ask and wait, approvals around a
// function, every way a request can close, the rest of the API, typed refusals, settings from the
// environment, a daemon that restarts mid-wait, and signed callbacks checked by verifyCallback.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";

import {
  ask, BridgeError, BridgeUnavailable, choice, Client, confirm, Conflict, InvalidRequest, NoAnswer, NotFound,
  Rejected, requestBody, requireApproval, signatureHeaders, standardSecret, StillOpen, text, Unauthorized,
  verifyCallback,
} from "../dist/index.js";
import { answerNext, freePort, sharedDaemon, startDaemon, TOKEN } from "./daemon.mjs";

let daemon;
let client;

before(async () => {
  daemon = await sharedDaemon();
  client = new Client({ baseUrl: daemon.url, token: TOKEN });
});
after(async () => {
  await daemon?.stop();
});

const answer = (body, title) => answerNext(daemon.url, body, { title, token: TOKEN });

describe("asking", () => {
  test("ask waits for the answer and shows who gave it", async () => {
    const asking = client.ask("Which environment?", [choice("env", "Where to?", ["staging", "prod"]), text("note", "Why?")],
      { context: { image: "api:2.3" }, labels: { team: "payments" } });
    const request = await answer({ values: { env: "prod", note: "hotfix" }, responder: "ana" }, "Which environment?");
    const got = await asking;
    assert.deepEqual([got.requestId, got.values, got.via, got.responderName], [request.id, { env: "prod", note: "hotfix" }, "api", "ana"]);
    assert.deepEqual([request.context, request.labels], [{ image: "api:2.3" }, { team: "payments" }]);
    assert.match(request.external_id, /^client-[0-9a-f-]{36}$/);
    assert.throws(() => got.value, /2 values/);
  });

  test("one line: no questions is one Approve/Reject, from HITL_BRIDGE_URL and HITL_BRIDGE_TOKEN", async () => {
    process.env.HITL_BRIDGE_URL = daemon.url + "/";
    process.env.HITL_BRIDGE_TOKEN = TOKEN;
    try {
      const asking = ask("Deploy api v2?");
      const request = await answer({ value: "yes" }, "Deploy api v2?");
      assert.equal((await asking).value, "yes");
      assert.deepEqual(request.questions.map((q) => [q.id, q.kind, q.prompt]), [["ok", "confirm", "Deploy api v2?"]]);
      delete process.env.HITL_BRIDGE_TOKEN;
      await assert.rejects(ask("Unauthorized?"), (e) => e instanceof Unauthorized && e.status === 401);
    } finally {
      delete process.env.HITL_BRIDGE_URL;
      delete process.env.HITL_BRIDGE_TOKEN;
    }
    assert.throws(() => new Client({ baseUrl: "127.0.0.1:8787" }), /http:\/\/ or https:\/\//);
    assert.ok(!JSON.stringify(client.endpoint).includes(TOKEN));
  });

  test("requireApproval runs the function only when approved", async () => {
    const ran = [];
    const restart = client.requireApproval(async (service, opts) => { ran.push(service); return `restarted ${service}`; },
      { name: "restart", title: "Restart a service", labels: { risk: "high" } });
    const calling = restart("api", { now: true });
    const request = await answer({ values: { approve: "yes" } }, "Restart a service");
    assert.equal(await calling, "restarted api");
    assert.deepEqual([request.tool, request.labels, request.context.arguments], ["restart", { risk: "high" }, ["api", { now: true }]]);

    const drop = requireApproval(function dropTable(name) { ran.push(name); }, { baseUrl: daemon.url, token: TOKEN });
    const dropping = drop("users");
    const asked = await answer({ values: { approve: "no" }, responder: "bob", reason: "not on a Friday" }, "Approve dropTable?");
    await assert.rejects(dropping, (e) => e instanceof Rejected && e.reason === "not on a Friday" && /bob/.test(e.message));
    assert.equal(asked.tool, "dropTable");
    assert.deepEqual(ran, ["api"]);
  });

  test("closing without an answer throws NoAnswer; maxWaitMs throws StillOpen and leaves it open", async () => {
    const asking = client.ask("Go?", [confirm("ok", "Go?")]);
    const [request] = await waitForOpen("Go?");
    await client.cancel(request.id, { reason: "run aborted" });
    await assert.rejects(asking, (e) => e instanceof NoAnswer && e.state === "cancelled" && /run aborted/.test(e.message));

    const late = await client.ask("Later?", undefined, { maxWaitMs: 200 }).catch((e) => e);
    assert.ok(late instanceof StillOpen && late.state === "posted", String(late));
    assert.equal((await client.get(late.requestId)).state, "posted");
    await client.answer(late.requestId, { value: "yes" });
    assert.equal((await client.wait(late.requestId, { maxWaitMs: 0 })).value, "yes");
  });

  test("the same external_id asks once", async () => {
    const first = client.ask("Once?", undefined, { external_id: "node-run-7/step-2" });
    await answer({ value: "yes" }, "Once?");
    const again = await client.ask("Once?", undefined, { external_id: "node-run-7/step-2" });
    assert.equal(again.requestId, (await first).requestId);
    assert.equal((await client.list()).filter((r) => r.external_id === "node-run-7/step-2").length, 1);
  });
});

describe("the rest of the API and refusals", () => {
  test("create, list, get, answer, cancel, events, sources", async () => {
    const first = await client.create(requestBody("Ship it?", undefined, { labels: { team: "a" } }));
    const second = await client.create({ title: "Where?", questions: [choice("env", "Where?", ["a", "b"])] });
    // posting follows the 201: wait until both are posted, then they list newest first
    const posted = await waitFor(async () => {
      const ids = (await client.list({ state: "posted" })).map((r) => r.id);
      return ids.includes(first) && ids.includes(second) ? ids : null;
    });
    assert.deepEqual(posted.filter((id) => id === first || id === second), [second, first]);
    const view = await client.answer(first, { value: "no", responder: "ana", reason: "freeze" });
    assert.equal(view.state, "answered");
    await assert.rejects(client.answer(first, { value: "yes" }), (e) => e instanceof Conflict && e.status === 409);
    await assert.rejects(client.answer(second, { value: "c" }), (e) => e instanceof InvalidRequest);
    assert.equal((await client.cancel(second, { reason: "moot" })).state, "cancelled");
    const kinds = (await client.events(second)).map((e) => e.kind);
    assert.equal(kinds[0], "created");
    assert.ok(kinds.includes("cancelled"));
    assert.ok((await client.list({ state: ["answered", "delivered"] })).some((r) => r.id === first));
    assert.deepEqual((await client.sources()).map((s) => s.name), ["webhook"]);
    await assert.rejects(client.get("r_missing"), NotFound);
    await assert.rejects(client.get("../sources"), NotFound); // one path segment, never another endpoint
  });

  test("refusals are typed and clear", async () => {
    await assert.rejects(new Client({ baseUrl: daemon.url }).ask("No token?"), Unauthorized);
    await assert.rejects(client.ask("Pick", [choice("env", "Where?", [])]),
      (e) => e instanceof InvalidRequest && e.status === 422 && /at least one option/.test(e.detail));
    await assert.rejects(client.ask("Token?", [{ id: "t", kind: "secret", prompt: "API token?" }]),
      (e) => e instanceof BridgeError && /callback/.test(e.message));
  });
});

describe("restarts", () => {
  test("a daemon restart mid-wait is ridden out; nobody listening is BridgeUnavailable", async () => {
    const port = await freePort();
    let own = await startDaemon({ port });
    try {
      const mine = new Client({ baseUrl: own.url });
      const asking = mine.ask("Across a restart?");
      await waitForOpen("Across a restart?", own.url);
      await own.stop({ keep: true });
      own = await startDaemon({ port, dir: own.dir }); // the same store
      await answerNext(own.url, { value: "no" }, { title: "Across a restart?" });
      assert.equal((await asking).value, "no");
    } finally {
      await own.stop();
    }
    const gone = new Client({ baseUrl: own.url, unavailableAfterMs: 0 });
    await assert.rejects(gone.get("r_1"), (e) => e instanceof BridgeUnavailable && /no answer for 0 s/.test(e.message));
  });
});

describe("no daemon", () => {
  test("ask with no daemon warns at once, then fails fast naming the URL and HITL_BRIDGE_URL", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const script = `
      import { ask } from ${JSON.stringify(new URL("../dist/index.js", import.meta.url).href)};
      try { await ask("Deploy?"); } catch (e) { console.log(e.name + ": " + e.message); process.exit(1); }`;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      env: { ...process.env, HITL_BRIDGE_URL: url }, stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => { stdout += c; });
    child.stderr.on("data", (c) => { stderr += c; });
    const [code] = await once(child, "exit");
    assert.equal(code, 1, stdout + stderr);
    assert.ok(stderr.includes(`no hitl-bridge daemon answers at ${url} yet`), stderr);
    assert.equal(stderr.split("no hitl-bridge daemon answers").length, 2, stderr); // once, not per attempt
    assert.match(stdout, /^BridgeUnavailable: could not create the request/);
    assert.ok(stdout.includes(url) && stdout.includes("HITL_BRIDGE_URL"), stdout);
  });

  test("a caller that asks for it (createUnavailableAfterMs) waits for the daemon to create", async () => {
    const port = await freePort();
    const mine = new Client({ baseUrl: `http://127.0.0.1:${port}`, createUnavailableAfterMs: 60_000 });
    const asking = mine.ask("Once it is up?");
    const own = await startDaemon({ port });
    try {
      await answerNext(own.url, { value: "yes" }, { title: "Once it is up?" });
      assert.equal((await asking).value, "yes");
    } finally {
      await own.stop();
    }
  });
});

describe("callbacks", () => {
  test("verifyCallback checks what the daemon signs, both ways", async () => {
    const received = [];
    const receiver = createServer((req, res) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.end("ok");
      });
    });
    receiver.listen(0, "127.0.0.1");
    await once(receiver, "listening");
    const url = `http://127.0.0.1:${receiver.address().port}/hook`;
    const plain = "plain-secret-0123456789";
    const whsec = "whsec_" + Buffer.alloc(32, 7).toString("base64");
    try {
      for (const [secret, signing] of [[plain, "hitl"], [whsec, "standard"], [plain, "standard"]]) {
        const id = await client.create(requestBody("Signed?", undefined, { callback: { url, secret, signing } }));
        await client.answer(id, { value: "yes" });
        const deadline = Date.now() + 10_000;
        while (!received.some((r) => r.headers["x-hitl-request-id"] === id) && Date.now() < deadline) {
          await new Promise((done) => setTimeout(done, 20));
        }
        const got = received.find((r) => r.headers["x-hitl-request-id"] === id);
        assert.ok(got, `no callback for ${signing}`);
        assert.equal("webhook-signature" in got.headers, signing === "standard");
        assert.equal(await verifyCallback(secret, got.headers, got.body), true);
        assert.equal(await verifyCallback(secret, new Headers(got.headers), got.body.toString()), true);
        assert.equal(await verifyCallback("another-secret-0123456", got.headers, got.body), false);
        assert.equal(await verifyCallback(secret, got.headers, Buffer.concat([got.body, Buffer.from(" ")])), false);
        if (signing === "standard") {
          assert.equal(got.headers["webhook-id"], `msg_${id}_answered`);
          assert.equal(await verifyCallback(standardSecret(secret), got.headers, got.body), true);
        }
      }
    } finally {
      receiver.close();
    }
  });

  test("verifyCallback refuses forged, replayed and hostile headers", async () => {
    const body = '{"request_id":"r_1"}';
    const secret = "whsec_" + Buffer.alloc(24, 1).toString("base64");
    const now = Math.floor(Date.now() / 1000);
    for (const scheme of ["hitl", "standard"]) {
      const headers = await signatureHeaders(scheme, secret, body, "msg_1", now);
      const sig = scheme === "standard" ? "webhook-signature" : "X-Hitl-Signature";
      const stamp = scheme === "standard" ? "webhook-timestamp" : "X-Hitl-Timestamp";
      assert.equal(await verifyCallback(secret, headers, body, { now }), true);
      assert.equal(await verifyCallback(secret, headers, body, { now: now + 301 }), false);
      assert.equal(await verifyCallback(secret, headers, body, { now: now - 301 }), false);
      assert.equal(await verifyCallback(secret, headers, body, { now: now + 600, toleranceS: 900 }), true);
      for (const hostile of ["", "v1=", "v1,", "ünïcödé-Ω", "v1," + "A".repeat(10_000), "\u0000"]) {
        assert.equal(await verifyCallback(secret, { ...headers, [sig]: hostile }, body, { now }), false, hostile);
      }
      for (const value of ["", "soon", "1e99", "-1", String(2 ** 80)]) {
        assert.equal(await verifyCallback(secret, { ...headers, [stamp]: value }, body, { now }), false, value);
      }
      assert.equal(await verifyCallback(secret, {}, body, { now }), false);
    }
    const headers = await signatureHeaders("standard", secret, body, "msg_1", now);
    const old = (await signatureHeaders("standard", "plain-secret-0123456789", body, "msg_1", now))["webhook-signature"];
    const rotating = { ...headers, "webhook-signature": `${old} v1a,xyz ${headers["webhook-signature"]}` };
    assert.equal(await verifyCallback(secret, rotating, body, { now }), true);
    assert.equal(await verifyCallback(secret, { ...headers, "webhook-id": "msg_2" }, body, { now }), false);
    assert.equal(await verifyCallback("whsec_***", headers, body, { now }), false);
  });
});

async function waitFor(check, what = "condition", within = 20_000) {
  const deadline = Date.now() + within;
  for (;;) {
    const found = await check();
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`${what}: not met in time`);
    await new Promise((done) => setTimeout(done, 20));
  }
}

async function waitForOpen(title, url = daemon.url) {
  const reader = url === daemon.url ? client : new Client({ baseUrl: url, token: TOKEN });
  return waitFor(async () => {
    const found = (await reader.list({ state: "posted" })).filter((r) => r.title === title);
    return found.length ? found : null;
  }, `an open request titled ${title}`);
}

describe("replies that are not the API", () => {
  test("are clear errors, and a lost reply to an answer is never sent twice", async () => {
    const { createServer: createTcpServer } = await import("node:net");
    const replies = [
      "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 18\r\nconnection: close\r\n\r\n<html>login</html>",
      "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n[]",
      "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 13\r\nconnection: close\r\n\r\n{\"id\": \"r_1\"}",
      null, // close without a reply
    ];
    const seen = [];
    const server = createTcpServer((socket) => {
      socket.once("data", (data) => {
        seen.push(String(data).split("\r\n")[0]);
        const reply = replies.shift();
        if (reply) socket.end(reply); else socket.destroy();
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const odd = new Client({ baseUrl: `http://127.0.0.1:${server.address().port}`, unavailableAfterMs: 1000 });
    try {
      await assert.rejects(odd.get("r_1"), (e) => e instanceof BridgeError && /without JSON: <html>login/.test(e.message));
      await assert.rejects(odd.list(), (e) => e instanceof BridgeError && /reply has no "requests"/.test(e.message));
      await assert.rejects(odd.wait("r_1"), (e) => e instanceof BridgeError && /reply has no "state"/.test(e.message));
      await assert.rejects(odd.answer("r_1", { value: "yes" }),
        (e) => e instanceof BridgeUnavailable && /may have been applied/.test(e.message));
      assert.deepEqual(seen.slice(3), ["POST /v1/requests/r_1/answer HTTP/1.1"]);
    } finally {
      server.close();
    }
  });
});
