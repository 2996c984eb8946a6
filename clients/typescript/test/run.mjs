// Run every test file (node --test) against one daemon started here, passed on as
// HITL_TEST_BRIDGE_URL (a file run alone starts its own). Arguments go to `node --test`.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { startDaemon, TOKEN } from "./daemon.mjs";

const daemon = await startDaemon({ config: { http: { api_tokens: { tests: TOKEN } } } });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => daemon.stop().then(() => process.exit(130)));
let code = 1;
try {
  const here = dirname(fileURLToPath(import.meta.url));
  const files = readdirSync(here).filter((f) => f.endsWith(".test.mjs")).map((f) => join(here, f));
  const args = process.argv.slice(2);
  // three files at a time: they mostly wait on daemons and npm
  const tests = spawn(process.execPath, ["--test", "--test-concurrency=3", ...(args.length ? args : files)], {
    stdio: "inherit", env: { ...process.env, HITL_TEST_BRIDGE_URL: daemon.url },
  });
  [code] = await once(tests, "exit");
} finally {
  await daemon.stop();
}
process.exit(code ?? 1);
