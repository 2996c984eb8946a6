// waitMany of the TypeScript client (built: dist/) against a real daemon: one watch stream for many
// requests, outcomes in the order they close, closed already, unknown ids, maxWaitMs, a daemon
// restart mid-stream, and (a raw server on 127.0.0.1) a cut stream reopened with the ids still open
// and a caller that stops early closing its connection.

import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";

import { Answer, Client, Missing, NoAnswer, requestBody, StillOpen, Unauthorized } from "../dist/index.js";
import { freePort, sharedDaemon, startDaemon, TOKEN } from "./daemon.mjs";

let daemon;
let client;

before(async () => {
  daemon = await sharedDaemon();
  client = new Client({ baseUrl: daemon.url, token: TOKEN });
});
after(async () => {
  await daemon?.stop();
});

const create = (on, title) => on.create(requestBody(title));

/** Collect what `waitMany` yields into `got` (a promise for the end). */
function collect(on, ids, options, got) {
  return (async () => {
    for await (const item of on.waitMany(ids, options)) got.push(item);
  })();
}

async function until(predicate, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((done) => setTimeout(done, 20));
  }
}

describe("waitMany", () => {
  test("outcomes arrive in the order requests close; closed already and unknown ids come first", async () => {
    const ids = [];
    for (const title of ["one", "two", "three", "four"]) ids.push(await create(client, `waitMany ${title}`));
    await client.answer(ids[3], { value: "no" });
    const got = [];
    const done = collect(client, [...ids, "0000000000000000000"], {}, got);
    await until(() => got.length === 2);
    const first = Object.fromEntries(got.map((g) => [g.constructor.name, g]));
    assert.deepEqual([first.Answer.requestId, first.Answer.values], [ids[3], { ok: "no" }]);
    assert.ok(first.Missing instanceof Missing && first.Missing.requestId === "0000000000000000000");
    await client.answer(ids[2], { value: "yes" });
    await until(() => got.length === 3);
    await client.cancel(ids[0], { reason: "not needed" });
    await until(() => got.length === 4);
    await client.answer(ids[1], { value: "no", reason: "not today" });
    await done;
    assert.ok(got[2] instanceof Answer && got[2].requestId === ids[2]);
    assert.ok(got[3] instanceof NoAnswer && got[3].requestId === ids[0] && got[3].state === "cancelled");
    assert.ok(got[4] instanceof Answer && got[4].reason === "not today");
    assert.equal(got.length, 5);
  });

  test("maxWaitMs yields StillOpen for each request still open", async () => {
    const ids = [await create(client, "waitMany open a"), await create(client, "waitMany open b")];
    await client.answer(ids[0], { value: "yes" });
    const got = [];
    await collect(client, ids, { maxWaitMs: 300 }, got);
    assert.ok(got[0] instanceof Answer && got[0].requestId === ids[0]);
    assert.ok(got[1] instanceof StillOpen && got[1].requestId === ids[1]);
    await assert.rejects(collect(new Client({ baseUrl: daemon.url, token: "wrong" }), ids, {}, []), Unauthorized);
  });

  test("a daemon restart mid-stream loses nothing", async () => {
    const port = await freePort();
    let own = await startDaemon({ port });
    try {
      const mine = new Client({ baseUrl: own.url });
      const ids = [await create(mine, "restart a"), await create(mine, "restart b")];
      const got = [];
      const done = collect(mine, ids, {}, got);
      await own.stop({ keep: true });
      own = await startDaemon({ port, dir: own.dir }); // the same store
      await mine.answer(ids[1], { value: "yes" }); // perhaps before the stream is back: reported when it is
      await until(() => got.length === 1);
      await mine.answer(ids[0], { value: "no" });
      await done;
      assert.deepEqual(got.map((g) => [g.requestId, g.values]), [[ids[1], { ok: "yes" }], [ids[0], { ok: "no" }]]);
    } finally {
      await own.stop();
    }
  });
});

describe("waitMany against a raw server", () => {
  const closed = (id) => `event: closed\ndata: ${JSON.stringify({ id, state: "answered",
    answer: { values: { ok: "yes" }, via: "api", responder: { name: "ann" } } })}\n\n`;

  test("a cut stream is reopened with the ids still open", async () => {
    const bodies = [];
    const server = createServer(async (request, response) => {
      let raw = "";
      for await (const chunk of request) raw += chunk;
      const body = JSON.parse(raw);
      bodies.push(body);
      response.writeHead(200, { "content-type": "text/event-stream" });
      if (bodies.length === 1) {
        // cut mid-event: the connection closes with the chunked body unfinished
        response.write(closed("b") + 'event: closed\ndata: {"id": "a", "sta', () => response.socket.end());
      } else {
        response.end(": keep-alive\n\n" + body.ids.map(closed).join("") + 'event: end\ndata: {"open": [], "reason": "done"}\n\n');
      }
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const got = [];
      await collect(new Client({ baseUrl: `http://127.0.0.1:${server.address().port}` }), ["a", "b", "c"], {}, got);
      assert.deepEqual(got.map((g) => g.requestId), ["b", "a", "c"]);
      assert.deepEqual(bodies.map((b) => b.ids), [["a", "b", "c"], ["a", "c"]]);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  test("a caller that stops early closes its connection", async () => {
    let socketClosed;
    const closedNow = new Promise((resolve) => { socketClosed = resolve; });
    const server = createServer((request, response) => {
      request.socket.on("close", socketClosed);
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write(closed("a")); // and nothing more: "b" stays open
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      for await (const item of new Client({ baseUrl: `http://127.0.0.1:${server.address().port}` }).waitMany(["a", "b"])) {
        assert.equal(item.requestId, "a");
        break;
      }
      await closedNow; // the test's own timeout is the deadline
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
