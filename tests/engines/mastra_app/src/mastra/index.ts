// The Mastra app the bridge's Mastra source is tested against: workflows only (no LLM),
// built with the released `mastra` CLI and served by the released server code on 127.0.0.1.
// Storage is LibSQL in memory: every server start is a clean engine.
import { Mastra } from '@mastra/core/mastra';
import { createStep, createWorkflow } from '@mastra/core/workflows';
import { LibSQLStore } from '@mastra/libsql';
import { z } from 'zod';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const release = z.object({ version: z.string(), workMs: z.number().default(0) });
const decision = z.object({ approved: z.boolean(), reason: z.string().optional(), workMs: z.number() });

// deploy: approve (a decision with an optional reason), then notes (text): two suspensions
// in a row. `workMs` makes the resumed approve step work that long before notes asks.
const approve = createStep({
  id: 'approve',
  description: 'A person approves the release',
  inputSchema: release,
  outputSchema: decision,
  suspendSchema: z.object({ question: z.string(), version: z.string() }),
  resumeSchema: z.object({ approved: z.boolean(), reason: z.string().optional() }),
  execute: async ({ inputData, resumeData, suspend }) => {
    if (!resumeData) return await suspend({ question: `Ship ${inputData.version}?`, version: inputData.version });
    if (inputData.workMs > 0) await pause(inputData.workMs);
    return { approved: resumeData.approved, reason: resumeData.reason, workMs: inputData.workMs };
  },
});

const notes = createStep({
  id: 'notes',
  inputSchema: decision,
  outputSchema: z.object({ approved: z.boolean(), reason: z.string().optional(), notes: z.string() }),
  resumeSchema: z.object({ notes: z.string().describe('Release notes') }),
  execute: async ({ inputData, resumeData, suspend }) => {
    if (!resumeData) return await suspend({ message: 'Release notes?' });
    return { approved: inputData.approved, reason: inputData.reason, notes: resumeData.notes };
  },
});

export const deploy = createWorkflow({
  id: 'deploy',
  inputSchema: release,
  outputSchema: z.object({ approved: z.boolean(), reason: z.string().optional(), notes: z.string() }),
})
  .then(approve)
  .then(notes)
  .commit();

// configure: one step whose resume schema asks several things of different types
const configure = createStep({
  id: 'configure',
  inputSchema: z.object({}),
  outputSchema: z.object({ region: z.string(), replicas: z.number(), notify: z.boolean().optional() }),
  resumeSchema: z.object({
    region: z.enum(['eu-west', 'us-east']).describe('Where to deploy'),
    replicas: z.number().int().min(1).max(20).describe('How many replicas'),
    notify: z.boolean().optional().describe('Tell the team?'),
  }),
  execute: async ({ resumeData, suspend }) => {
    if (!resumeData) return await suspend({ prompt: 'Configure the rollout', __hint: 'internal' });
    return resumeData;
  },
});
export const rollout = createWorkflow({ id: 'rollout', inputSchema: z.object({}), outputSchema: z.any() })
  .then(configure)
  .commit();

// freeform: no resume schema; the suspend payload's options are the answer
const pick = createStep({
  id: 'pick',
  inputSchema: z.object({}),
  outputSchema: z.object({ picked: z.any() }),
  execute: async ({ resumeData, suspend }) => {
    if (!resumeData) {
      return await suspend({ question: 'Which region?', options: [{ label: 'Europe', value: 'eu' }, 'us'], ticket: 'OPS-7' });
    }
    return { picked: resumeData };
  },
});
export const freeform = createWorkflow({ id: 'freeform', inputSchema: z.object({}), outputSchema: z.any() })
  .then(pick)
  .commit();

// parallel: two steps suspended side by side, each its own request
const check = (id: string) =>
  createStep({
    id,
    inputSchema: z.object({}),
    outputSchema: z.object({ ok: z.boolean() }),
    resumeSchema: z.object({ ok: z.boolean() }),
    execute: async ({ resumeData, suspend }) => {
      if (!resumeData) return await suspend({ question: `Did the ${id} review pass?` });
      return { ok: resumeData.ok };
    },
  });
export const parallel = createWorkflow({ id: 'parallel', inputSchema: z.object({}), outputSchema: z.any() })
  .parallel([check('security'), check('legal')])
  .commit();

// nested: a workflow used as a step; Mastra reports the suspension on the outer step
const sign = createStep({
  id: 'sign',
  inputSchema: z.object({}),
  outputSchema: z.object({ signer: z.string() }),
  resumeSchema: z.object({ signer: z.string().describe('Who signs the contract') }),
  execute: async ({ resumeData, suspend }) => {
    if (!resumeData) return await suspend({ question: 'Who signs?' });
    return { signer: resumeData.signer };
  },
});
const contract = createWorkflow({ id: 'contract', inputSchema: z.object({}), outputSchema: z.object({ signer: z.string() }) })
  .then(sign)
  .commit();
export const nested = createWorkflow({ id: 'nested', inputSchema: z.object({}), outputSchema: z.any() })
  .then(contract)
  .commit();

// loop: the same step asks again until the answer is "done"
const round = createStep({
  id: 'round',
  inputSchema: z.object({ n: z.number().default(0) }),
  outputSchema: z.object({ n: z.number(), last: z.string() }),
  resumeSchema: z.object({ answer: z.string() }),
  execute: async ({ inputData, resumeData, suspend }) => {
    if (!resumeData) return await suspend({ question: `Round ${inputData.n + 1}?` });
    return { n: inputData.n + 1, last: resumeData.answer };
  },
});
export const loop = createWorkflow({ id: 'loop', inputSchema: z.object({ n: z.number().default(0) }), outputSchema: z.any() })
  .dountil(round, async ({ inputData }) => inputData.last === 'done')
  .commit();

// triage: resume schemas that allow anything (z.any()), with the choices in the suspend payload
const priority = createStep({
  id: 'priority',
  inputSchema: z.object({}),
  outputSchema: z.object({ priority: z.any() }),
  resumeSchema: z.any(),
  execute: async ({ resumeData, suspend }) => {
    if (resumeData === undefined) return await suspend({ question: 'Which priority?', choices: ['low', 'high'] });
    return { priority: resumeData };
  },
});
const owner = createStep({
  id: 'owner',
  inputSchema: z.object({ priority: z.any() }),
  outputSchema: z.object({ priority: z.any(), owner: z.any() }),
  resumeSchema: z.object({ owner: z.any() }),
  execute: async ({ inputData, resumeData, suspend }) => {
    if (!resumeData) {
      return await suspend({ question: 'Who owns it?', allowedValues: [{ label: 'Ops team', value: 'ops' }, 'dev'] });
    }
    return { priority: inputData.priority, owner: resumeData.owner };
  },
});
export const triage = createWorkflow({ id: 'triage', inputSchema: z.object({}), outputSchema: z.any() })
  .then(priority)
  .then(owner)
  .commit();

export const mastra = new Mastra({
  workflows: { deploy, rollout, freeform, parallel, nested, loop, triage },
  storage: new LibSQLStore({ id: 'hitl-bridge-tests', url: ':memory:' }),
});
