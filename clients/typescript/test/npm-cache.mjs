// Install a lockfile's packages once per machine, outside the checkout (CI runs in clean
// checkouts): `${HITL_BRIDGE_NPM_CACHE:-~/.cache/hitl-bridge/npm}/<hash of the lockfile>/node_modules`.

import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export function cacheRoot() {
  return process.env.HITL_BRIDGE_NPM_CACHE
    || join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "hitl-bridge", "npm");
}

/** True when npm can be run here. */
export async function npmAvailable() {
  try {
    await run("npm", ["--version"]);
    return true;
  } catch {
    return false;
  }
}

/** The node_modules of `project` (a directory with package.json and package-lock.json), installed
 * with `npm ci` on first use; later calls (any checkout, same lockfile) reuse it. */
export async function cachedNodeModules(project) {
  const lock = readFileSync(join(project, "package-lock.json"));
  const key = createHash("sha256").update(lock).update(readFileSync(join(project, "package.json")))
    .update(process.versions.node.split(".")[0]).digest("hex").slice(0, 16);
  const target = join(cacheRoot(), key);
  if (existsSync(join(target, "node_modules"))) return join(target, "node_modules");
  const building = `${target}.tmp-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  copyFileSync(join(project, "package.json"), join(building, "package.json"));
  copyFileSync(join(project, "package-lock.json"), join(building, "package-lock.json"));
  try {
    await run("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: building, maxBuffer: 1 << 24 });
    renameSync(building, target); // another run may have won the race: then use its copy
  } catch (error) {
    if (!existsSync(join(target, "node_modules"))) throw error;
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return join(target, "node_modules");
}
