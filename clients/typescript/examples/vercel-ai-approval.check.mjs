// bridgeApproval with the real AI SDK (generateText) and its mock model: the person approves one
// call and rejects another; the model reads the denial's reason. Run by ../test/examples.test.mjs.

import assert from "node:assert/strict";
import { test } from "node:test";

import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { Client } from "hitl-bridge-client";
import { z } from "zod";

import { answerEach } from "./daemon.mjs";
import { bridgeApproval } from "./vercel-ai-approval.mjs";

const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 } };
const step = (content, unified) => ({ content, finishReason: { unified, raw: unified }, usage, warnings: [] });
const call = (id, toolName, input) => ({ type: "tool-call", toolCallId: id, toolName, input: JSON.stringify(input) });

test("people approve deploy and reject dropTable; readLogs needs nobody", async () => {
  const ran = [];
  const model = new MockLanguageModelV4({ doGenerate: [
    step([call("c1", "deploy", { service: "api" }), call("c2", "dropTable", { name: "users" }),
      call("c3", "readLogs", { service: "api" })], "tool-calls"),
    step([{ type: "text", text: "deployed api, left users alone" }], "stop"),
  ] });
  const tools = {
    deploy: tool({ description: "Deploy", inputSchema: z.object({ service: z.string() }),
      execute: async ({ service }) => { ran.push(`deploy ${service}`); return `deployed ${service}`; } }),
    dropTable: tool({ description: "Drop a table", inputSchema: z.object({ name: z.string() }),
      execute: async ({ name }) => { ran.push(`drop ${name}`); return "dropped"; } }),
    readLogs: tool({ description: "Read logs", inputSchema: z.object({ service: z.string() }),
      execute: async ({ service }) => { ran.push(`logs ${service}`); return "all quiet"; } }),
  };
  const generating = generateText({
    model, tools, prompt: "ship api and clean up", stopWhen: stepCountIs(3),
    toolApproval: bridgeApproval({ client: new Client(), tools: ["deploy", "dropTable"], labels: { team: "ops" } }),
  });
  const { "Allow deploy?": deploy, "Allow dropTable?": drop } = await answerEach(process.env.HITL_BRIDGE_URL, {
    "Allow deploy?": { value: "yes", responder: "ana" },
    "Allow dropTable?": { value: "no", responder: "bob", reason: "not on a Friday" },
  }, { token: process.env.HITL_BRIDGE_TOKEN });
  const result = await generating;

  assert.equal(result.text, "deployed api, left users alone");
  assert.deepEqual(ran.sort(), ["deploy api", "logs api"]);
  assert.deepEqual([deploy.tool, deploy.engine, deploy.external_id, deploy.context, deploy.labels],
    ["deploy", "ai-sdk", "ai-sdk/c1", { input: { service: "api" } }, { team: "ops" }]);
  assert.deepEqual(drop.context, { input: { name: "users" } });
  const toolResults = model.doGenerateCalls[1].prompt.filter((m) => m.role === "tool").flatMap((m) => m.content);
  const byCall = Object.fromEntries(toolResults.map((r) => [r.toolCallId, r.output]));
  assert.deepEqual(byCall.c1, { type: "text", value: "deployed api" });
  assert.equal(byCall.c2.type, "execution-denied");
  assert.equal(byCall.c2.reason, "Rejected by bob: not on a Friday");
});
