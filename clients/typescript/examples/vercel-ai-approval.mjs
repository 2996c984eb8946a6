// People approve the Vercel AI SDK's tool calls through hitl-bridge (AI SDK 7 `toolApproval`).
//
//   import { generateText, isStepCount } from "ai";
//   import { bridgeApproval } from "./vercel-ai-approval.mjs";
//
//   const result = await generateText({
//     model, tools: { deploy, readLogs }, prompt: "Ship api 2.3",
//     toolApproval: bridgeApproval({ tools: ["deploy"], responders: ["slack:U0123ABC"] }),
//     stopWhen: isStepCount(5),
//   });
//
// Each call of a listed tool (every tool when `tools` is not given) waits for Approve / Reject in
// Slack, Telegram or the web inbox, showing the tool's input. A rejection reaches the model as the
// tool's denied result, with who rejected it and why.

import { Client, confirm, NoAnswer, requestBody } from "hitl-bridge-client";

/** A `toolApproval` function for generateText, streamText and agents. `fields`: any field of the
 * bridge request (responders, labels, timeout_s...); `client`: default from HITL_BRIDGE_URL / _TOKEN. */
export function bridgeApproval({ client = new Client(), tools, ...fields } = {}) {
  return async ({ toolCall }) => {
    if (tools && !tools.includes(toolCall.toolName)) return { type: "not-applicable" };
    const body = requestBody(`Allow ${toolCall.toolName}?`, [confirm("approve", `Run ${toolCall.toolName} with this input?`)], {
      engine: "ai-sdk", tool: toolCall.toolName, external_id: `ai-sdk/${toolCall.toolCallId}`,
      ...fields, context: { input: toolCall.input, ...fields.context },
    });
    try {
      const answer = await client.wait(await client.create(body));
      if (answer.values.approve === "yes") return { type: "approved" };
      return { type: "denied", reason: `Rejected by ${answer.responderName}${answer.reason ? `: ${answer.reason}` : "."}` };
    } catch (error) {
      if (error instanceof NoAnswer) return { type: "denied", reason: `No approval: the request ${error.state}.` };
      throw error;
    }
  };
}
