// Mastra tools that ask people through hitl-bridge.
//
//   import { Agent } from "@mastra/core/agent";
//   import { askHumanTool, guardedTool } from "./mastra-tool.mjs";
//
//   const agent = new Agent({ name: "ops", instructions: "...", model, tools: {
//     askHuman: askHumanTool(),                                 // the agent asks a person a question
//     deploy: guardedTool(deployTool, { responders: ["group:oncall"] }),   // a person approves each call
//   } });
//
// `askHuman` shows the question (with buttons when the agent offers options) in Slack, Telegram or
// the web inbox and returns what the person answered; `guardedTool` runs the wrapped tool only after
// an Approve, and returns the rejection (who and why) to the agent otherwise.

import { createTool } from "@mastra/core/tools";
import { choice, Client, NoAnswer, Rejected, text } from "hitl-bridge-client";
import { z } from "zod";

/** A tool the agent calls to ask a person; `fields`: any field of the bridge request. */
export function askHumanTool({ client = new Client(), ...fields } = {}) {
  return createTool({
    id: "ask-human",
    description: "Ask a person a question and wait for the answer. Give options when the answer is one of a few.",
    inputSchema: z.object({ question: z.string().min(1), options: z.array(z.string()).optional() }),
    outputSchema: z.object({ answer: z.string().nullable(), by: z.string().nullable(), note: z.string().nullable() }),
    execute: async ({ question, options }) => {
      const asked = options?.length ? choice("answer", question, options) : text("answer", question);
      try {
        const answer = await client.ask(question, [asked], { engine: "mastra", tool: "ask-human", ...fields });
        return { answer: String(answer.value), by: answer.responderName, note: answer.reason };
      } catch (error) {
        if (error instanceof NoAnswer) return { answer: null, by: null, note: `no answer: the request ${error.state}` };
        throw error;
      }
    },
  });
}

/** The same tool, asking for approval before each call (showing its input). */
export function guardedTool(tool, { client = new Client(), ...fields } = {}) {
  return createTool({
    id: tool.id,
    description: tool.description,
    inputSchema: tool.inputSchema,
    execute: async (input, context) => {
      const run = client.requireApproval((shown) => tool.execute(shown, context),
        { name: tool.id, engine: "mastra", ...fields });
      try {
        return await run(input);
      } catch (error) {
        if (error instanceof Rejected) return { rejected: true, reason: error.message };
        if (error instanceof NoAnswer) return { rejected: true, reason: `no approval: the request ${error.state}` };
        throw error;
      }
    },
  });
}
