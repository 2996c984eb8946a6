// The npm package as published: `npm pack` builds the tarball, `npm install` puts it into a clean
// project (no network: it has no dependencies), whose script asks a real daemon and whose
// TypeScript type-checks against the package's declarations.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { answerNext, sharedDaemon, TOKEN } from "./daemon.mjs";

const run = promisify(execFile);
const PACKAGE = resolve(fileURLToPath(import.meta.url), "../..");
const TSC = join(PACKAGE, "node_modules", "typescript", "bin", "tsc");
let daemon;
let app;

before(async () => {
  const started = sharedDaemon();
  const dir = mkdtempSync(join(tmpdir(), "hitl-client-package-"));
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", dir], { cwd: PACKAGE });
  const [packed] = JSON.parse(stdout);
  app = join(dir, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "agent", private: true, type: "module" }));
  await run("npm", ["install", "--offline", "--no-audit", "--no-fund", join(dir, packed.filename)], { cwd: app });
  app = { dir: app, packed, root: dir };
  daemon = await started;
});
after(async () => {
  await daemon?.stop();
  if (app?.root) rmSync(app.root, { recursive: true, force: true });
});

test("the tarball holds the built code and declarations, and no dependencies", () => {
  const files = app.packed.files.map((f) => f.path).sort();
  assert.ok(files.includes("dist/index.js") && files.includes("dist/index.d.ts") && files.includes("LICENSE"), files);
  assert.ok(!files.some((f) => f.startsWith("src/") || f.startsWith("test/") || f.startsWith("examples/")), files);
  const installed = JSON.parse(readFileSync(join(app.dir, "node_modules", "hitl-bridge-client", "package.json"), "utf8"));
  assert.equal(installed.dependencies, undefined);
  assert.deepEqual(JSON.parse(readFileSync(join(app.dir, "package.json"), "utf8")).dependencies,
    { "hitl-bridge-client": `file:../${app.packed.filename}` });
});

test("an agent in a clean project asks in one line", async () => {
  writeFileSync(join(app.dir, "agent.mjs"), `
    import { ask, Client } from "hitl-bridge-client";
    const answer = await ask("From a clean project?");
    const again = await new Client().ask("Again?", undefined, { external_id: "clean-1" });
    console.log(JSON.stringify({ value: answer.value, again: again.value, by: again.responderName }));
  `);
  const agent = run(process.execPath, ["agent.mjs"], {
    cwd: app.dir, env: { HITL_BRIDGE_URL: daemon.url, HITL_BRIDGE_TOKEN: TOKEN },
  });
  await answerNext(daemon.url, { value: "yes" }, { title: "From a clean project?", token: TOKEN });
  await answerNext(daemon.url, { value: "no", responder: "ana" }, { title: "Again?", token: TOKEN });
  const { stdout } = await agent;
  assert.deepEqual(JSON.parse(stdout), { value: "yes", again: "no", by: "ana" });
});

test("TypeScript code type-checks against the published declarations", async () => {
  writeFileSync(join(app.dir, "agent.ts"), `
    import { ask, type Answer, Client, confirm, Rejected, verifyCallback } from "hitl-bridge-client";
    const client = new Client({ baseUrl: "http://127.0.0.1:8787", token: undefined });
    export async function go(): Promise<boolean> {
      const answer: Answer = await ask("Deploy?", [confirm("ok", "Deploy now?")], { labels: { env: "prod" } });
      const guarded = client.requireApproval(async (service: string) => service.length, { title: "Restart" });
      const length: number = await guarded("api");
      return answer.values["ok"] === "yes" && length > 0 && !(answer instanceof Rejected)
        && await verifyCallback("secret", new Headers(), "{}");
    }
  `);
  writeFileSync(join(app.dir, "wrong.ts"), `
    import { Client } from "hitl-bridge-client";
    export const n: number = await new Client().ask(42);
  `);
  const options = ["--noEmit", "--strict", "--module", "nodenext", "--target", "es2022", "--lib", "es2022,dom",
    "--types", ""];
  const checked = await run(process.execPath, [TSC, ...options, "agent.ts"], { cwd: app.dir }).catch((e) => e);
  assert.equal(checked.code ?? 0, 0, checked.stdout);
  const wrong = await run(process.execPath, [TSC, ...options, "wrong.ts"], { cwd: app.dir }).catch((e) => e);
  assert.match(String(wrong.stdout), /TS2345|TS2322/); // a number is no title, and ask gives an Answer
});
