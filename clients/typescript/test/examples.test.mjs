// The documented integrations in examples/ (Vercel AI SDK tool approval, Mastra tools), run with the
// real `ai` and `@mastra/core` from the npm registry (installed once per machine, outside the
// checkout: npm-cache.mjs) against the daemon. Each examples/*.check.mjs is a node:test file run in
// a scratch project holding the examples, those packages and this client (dist/).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { sharedDaemon, TOKEN } from "./daemon.mjs";
import { cachedNodeModules, npmAvailable } from "./npm-cache.mjs";

const run = promisify(execFile);
const PACKAGE = resolve(fileURLToPath(import.meta.url), "../..");
const EXAMPLES = join(PACKAGE, "examples");
const CHECKS = readdirSync(EXAMPLES).filter((f) => f.endsWith(".check.mjs"));
const NPM = await npmAvailable();
let daemon;
let project;

before(async () => {
  if (!NPM) return;
  daemon = await sharedDaemon();
  const modules = await cachedNodeModules(EXAMPLES);
  project = mkdtempSync(join(tmpdir(), "hitl-client-examples-"));
  mkdirSync(join(project, "node_modules"));
  for (const entry of readdirSync(modules)) {
    if (!entry.startsWith(".")) symlinkSync(join(modules, entry), join(project, "node_modules", entry));
  }
  symlinkSync(PACKAGE, join(project, "node_modules", "hitl-bridge-client")); // this client, as built (dist/)
  for (const file of readdirSync(EXAMPLES).filter((f) => f.endsWith(".mjs"))) cpSync(join(EXAMPLES, file), join(project, file));
  cpSync(join(PACKAGE, "test", "daemon.mjs"), join(project, "daemon.mjs"));
  cpSync(join(EXAMPLES, "package.json"), join(project, "package.json"));
}, { timeout: 600_000 }); // the first use installs the packages

after(async () => {
  await daemon?.stop();
  if (project) rmSync(project, { recursive: true, force: true });
});

for (const check of CHECKS) {
  test(check, { skip: NPM ? false : "npm is not installed here: the examples cannot be installed" }, async () => {
    // without NODE_TEST_CONTEXT, which would make this run report to ours instead of its stdout
    const { NODE_TEST_CONTEXT, ...env } = process.env;
    const ran = await run(process.execPath, ["--test", "--test-reporter=tap", "--test-timeout=60000", check], {
      cwd: project, timeout: 120_000, env: { ...env, HITL_BRIDGE_URL: daemon.url, HITL_BRIDGE_TOKEN: TOKEN },
    }).catch((error) => error);
    assert.equal(ran.code ?? 0, 0, `${ran.stdout}\n${ran.stderr}`);
    assert.match(ran.stdout, /# pass [1-9]/);
    assert.match(ran.stdout, /# fail 0/);
  });
}
