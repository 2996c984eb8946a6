// Batches, delegation windows and standing approvals through the TypeScript client (built:
// dist/) against a real daemon with people: one call answers alike requests with a result per
// item, a window is set, listed and ended, and a grant made with an answer is listed and revoked.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client, NotFound } from "../dist/index.js";
import { startDaemon } from "./daemon.mjs";

const OPS = "ops-t0k3n-" + "o".repeat(20);
const AGENT = "agent-t0k3n-" + "a".repeat(20);
let daemon;
let ops;
let agent;

before(async () => {
  daemon = await startDaemon({
    config: {
      http: { api_tokens: { ops: { token: OPS, act_for_others: true }, agent: AGENT } },
      people: { ana: ["web:ana"], bo: ["web:bo"] },
      routes: [{ name: "agents", match: { engine: "claude" }, notify: ["web"] }],
    },
  });
  ops = new Client({ baseUrl: daemon.url, token: OPS });
  agent = new Client({ baseUrl: daemon.url, token: AGENT });
});
after(async () => {
  await daemon?.stop();
});

const confirm = [{ id: "approve", kind: "confirm", prompt: "Allow?" }];

describe("people", () => {
  test("answerBatch answers alike requests, each with its own result", async () => {
    const ids = [];
    for (const n of [1, 2, 3]) {
      ids.push(await agent.create({ title: `Delete file 'f${n}.txt'`, tool: "fs.delete", questions: confirm }));
    }
    const grouped = await ops.batches();
    assert.deepEqual(grouped.map((b) => [...b.ids].sort()), [[...ids].sort()]);
    const result = await ops.answerBatch([...ids, "r_nosuch"], { value: "yes", responder: "person:ana" });
    assert.equal(result.counts.answered, 3);
    assert.deepEqual(result.results.map((r) => r.id), [...ids, "r_nosuch"]);
    assert.notEqual(result.results[3].outcome, "answered");
    const view = await ops.get(ids[0]);
    assert.deepEqual(view.answer.values, { approve: "yes" });
  });

  test("away sets a window, awayList shows it, back ends it", async () => {
    const until = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const window = await ops.away("bo", { until, person: "person:ana" });
    assert.deepEqual([window.person, window.delegate], ["ana", "bo"]);
    assert.deepEqual((await ops.awayList()).map((w) => w.person), ["ana"]);
    assert.equal((await ops.back("person:ana")).ended, true);
    assert.deepEqual(await ops.awayList(), []);
    await assert.rejects(ops.away("nobody", { until, person: "person:ana" }), /422|nobody/);
  });

  test("an answer with a grant makes a standing approval, listed and revoked", async () => {
    const id = await agent.create({ title: "Allow Bash: npm test", engine: "claude", tool: "Bash", session: "s-1",
      context: { command: "npm test" }, questions: confirm });
    const answered = await ops.answer(id, { values: { approve: "yes" }, grant: "session" });
    assert.equal(answered.state, "answered");
    const [made] = await ops.grants();
    assert.ok(made && typeof made.id === "string");
    assert.equal((await ops.grant(made.id)).id, made.id);
    await ops.revokeGrant(made.id);
    assert.deepEqual(await ops.grants(), []);
    assert.equal((await ops.grants({ all: true })).length, 1);
    await assert.rejects(ops.grant("g_nosuch"), NotFound);
  });
});
