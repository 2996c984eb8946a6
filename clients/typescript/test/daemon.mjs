// A real hitl-bridge daemon for the tests: `.venv/bin/hitl-bridge serve` with a temp config on a
// free 127.0.0.1 port (HITL_BRIDGE_BIN names another binary). Stop it with `await daemon.stop()`.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../../..");
export const BIN = process.env.HITL_BRIDGE_BIN || join(ROOT, ".venv", "bin", "hitl-bridge");
const START_WITHIN_MS = 30_000;
export const TOKEN = "node-t0k3n-" + "x".repeat(20);

export async function freePort() {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  server.close();
  await once(server, "close");
  return port;
}

/** Start a daemon; `config` is merged into the base config (store in a temp dir, webhook intake).
 * `stop({ keep: true })` leaves its directory (and store) for another start with `dir`. */
export async function startDaemon({ config = {}, port, dir } = {}) {
  dir ??= mkdtempSync(join(tmpdir(), "hitl-bridge-node-"));
  port ??= await freePort();
  const settings = {
    store: { url: `sqlite:///${dir}/bridge.db` },
    sources: [{ type: "webhook" }],
    web: {},
    ...config,
    http: { listen: `127.0.0.1:${port}`, ...(config.http ?? {}) },
  };
  const file = join(dir, "hitl-bridge.yaml");
  writeFileSync(file, JSON.stringify(settings)); // JSON is YAML
  const child = spawn(BIN, ["--config", file, "serve"], {
    cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  process.on("exit", () => child.kill("SIGKILL")); // never outlive the tests
  const exited = once(child, "exit");
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + START_WITHIN_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the daemon exited with ${child.exitCode}: ${stderr}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`the daemon did not start within ${START_WITHIN_MS} ms: ${stderr}`);
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  return {
    url, port, dir, config,
    stderr: () => stderr,
    async stop({ keep = false } = {}) {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await exited;
      }
      if (!keep) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The daemon test/run.mjs started for every test file (HITL_TEST_BRIDGE_URL), else one of this
 * file's own; both take the bearer token TOKEN. */
export async function sharedDaemon() {
  const url = process.env.HITL_TEST_BRIDGE_URL;
  if (url) return { url, stop: async () => {} };
  return startDaemon({ config: { http: { api_tokens: { tests: TOKEN } } } });
}

/** Play the person for several requests, in whatever order they come: `answers` maps a title to
 * its answer body (oldest open request of that title first). Returns the requests answered, by title. */
export async function answerEach(url, answers, { token, timeoutMs = 20_000 } = {}) {
  const headers = { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) };
  const answered = {};
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { requests } = await (await fetch(`${url}/v1/requests?state=posted`, { headers })).json();
    for (const request of requests.reverse()) {
      if (!(request.title in answers) || request.title in answered) continue;
      const response = await fetch(`${url}/v1/requests/${request.id}/answer`, {
        method: "POST", headers, body: JSON.stringify(answers[request.title]),
      });
      if (!response.ok) throw new Error(`answer refused: ${response.status} ${await response.text()}`);
      answered[request.title] = request;
    }
    const left = Object.keys(answers).filter((title) => !(title in answered));
    if (!left.length) return answered;
    if (Date.now() > deadline) throw new Error(`no open request titled ${left.join(" / ")} within ${timeoutMs} ms`);
    await new Promise((done) => setTimeout(done, 20));
  }
}

/** Play the person: wait for the oldest open request titled `title` and answer it with `body`. */
export async function answerNext(url, body, { title, token, timeoutMs } = {}) {
  return (await answerEach(url, { [title]: body }, { token, timeoutMs }))[title];
}
