// askHumanTool and guardedTool with the real @mastra/core createTool: the schema is checked, the
// person answers through the bridge. Run by ../test/examples.test.mjs.

import assert from "node:assert/strict";
import { test } from "node:test";

import { createTool } from "@mastra/core/tools";
import { Client } from "hitl-bridge-client";
import { z } from "zod";

import { answerNext } from "./daemon.mjs";
import { askHumanTool, guardedTool } from "./mastra-tool.mjs";

const url = process.env.HITL_BRIDGE_URL;
const token = process.env.HITL_BRIDGE_TOKEN;

test("askHuman asks with buttons when given options, as text otherwise", async () => {
  const askHuman = askHumanTool({ client: new Client(), labels: { team: "ops" } });
  const asking = askHuman.execute({ question: "Which region first?", options: ["eu", "us"] }, {});
  const shown = await answerNext(url, { value: "eu", responder: "ana" }, { title: "Which region first?", token });
  assert.deepEqual(await asking, { answer: "eu", by: "ana", note: null });
  assert.deepEqual(shown.questions.map((q) => [q.kind, q.options]), [["choice", ["eu", "us"]]]);
  assert.deepEqual([shown.engine, shown.labels], ["mastra", { team: "ops" }]);

  const free = askHuman.execute({ question: "Anything to add?" }, {});
  const asked = await answerNext(url, { value: "ship it", reason: "after lunch" }, { title: "Anything to add?", token });
  assert.deepEqual(await free, { answer: "ship it", by: "tests", note: "after lunch" });  // the token answers as itself
  assert.equal(asked.questions[0].kind, "text");
  const invalid = await askHuman.execute({ question: "" }, {});
  assert.ok(invalid?.error, "Mastra refuses input outside the schema before anyone is asked");
});

test("guardedTool runs the tool only after an Approve", async () => {
  const ran = [];
  const deploy = createTool({
    id: "deploy", description: "Deploy a service", inputSchema: z.object({ service: z.string() }),
    execute: async ({ service }) => { ran.push(service); return { deployed: service }; },
  });
  const guarded = guardedTool(deploy, { client: new Client(), responders: [] });
  const approving = guarded.execute({ service: "api" }, {});
  const request = await answerNext(url, { values: { approve: "yes" } }, { title: "Approve deploy?", token });
  assert.deepEqual(await approving, { deployed: "api" });
  assert.deepEqual(request.context.arguments, [{ service: "api" }]);
  const rejecting = guarded.execute({ service: "db" }, {});
  await answerNext(url, { values: { approve: "no" }, responder: "bob", reason: "freeze" }, { title: "Approve deploy?", token });
  assert.deepEqual(await rejecting, { rejected: true, reason: "rejected by bob: freeze" });
  assert.deepEqual(ran, ["api"]);
});
