// The package installs from a clean checkout in one command, with no build step and no
// network: `npm install ./clients/typescript` into a project, and `npm pack` of the checkout.
// The built code (dist/) is committed; it must be what tsc builds from src/.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const PACKAGE = resolve(fileURLToPath(import.meta.url), "../..");
let root;
let checkout;

before(async () => {
  root = mkdtempSync(join(tmpdir(), "hitl-client-checkout-"));
  checkout = join(root, "clients", "typescript");
  // what a fresh clone has: the files git tracks, no node_modules
  const { stdout } = await run("git", ["ls-files", "-z", "--", "."], { cwd: PACKAGE });
  for (const file of stdout.split("\0").filter(Boolean)) {
    mkdirSync(dirname(join(checkout, file)), { recursive: true });
    cpSync(join(PACKAGE, file), join(checkout, file));
  }
});
after(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

test("npm install ./clients/typescript works from a clean clone, in one command", async () => {
  const app = join(root, "agent");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "agent", private: true, type: "module" }));
  await run("npm", ["install", "--offline", "--no-audit", "--no-fund", "../clients/typescript"], { cwd: app });
  writeFileSync(join(app, "check.mjs"),
    'import { ask, Client, BridgeUnavailable } from "hitl-bridge-client";\n'
    + "console.log([typeof ask, typeof Client, typeof BridgeUnavailable].join(' '));\n");
  const { stdout } = await run(process.execPath, ["check.mjs"], { cwd: app });
  assert.equal(stdout.trim(), "function function function");
});

test("npm pack works from a clean clone (no tsc needed) and ships dist, README and LICENSE", async () => {
  const { stdout } = await run("npm", ["pack", "--json", "--dry-run"], { cwd: checkout });
  const files = JSON.parse(stdout)[0].files.map((f) => f.path);
  for (const wanted of ["dist/index.js", "dist/index.d.ts", "README.md", "LICENSE", "package.json"]) {
    assert.ok(files.includes(wanted), `${wanted} missing from ${files}`);
  }
});

test("the committed dist/ is what tsc builds from src/ (run `npm run build` and commit dist/)", async () => {
  // test/setup.mjs built dist/ from src/ just before the tests: git sees no change if it was current
  const changed = (await run("git", ["diff", "--name-only", "--", "dist"], { cwd: PACKAGE })).stdout;
  const untracked = (await run("git", ["ls-files", "--others", "--exclude-standard", "--", "dist"], { cwd: PACKAGE })).stdout;
  assert.equal(changed + untracked, "", `dist/ is out of date:\n${changed}${untracked}`);
});
