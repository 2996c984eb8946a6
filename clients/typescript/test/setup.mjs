// Before the tests: node_modules (typescript) from the per-machine cache, then build dist/ with tsc.

import { execFile } from "node:child_process";
import { lstatSync, readlinkSync, rmSync, symlinkSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { cachedNodeModules } from "./npm-cache.mjs";

const PACKAGE = resolve(fileURLToPath(import.meta.url), "../..");
const modules = await cachedNodeModules(PACKAGE);
const link = join(PACKAGE, "node_modules");
let current;
try {
  current = lstatSync(link).isSymbolicLink() ? readlinkSync(link) : "(a directory)";
} catch {
  current = undefined;
}
if (current !== modules) {
  rmSync(link, { recursive: true, force: true });
  symlinkSync(modules, link);
}
const started = Date.now();
try {
  await promisify(execFile)(process.execPath, [join(link, "typescript", "bin", "tsc"), "-p", join(PACKAGE, "tsconfig.json")]);
} catch (error) {
  console.error(`tsc failed:\n${error.stdout}${error.stderr}`);
  process.exit(1);
}
console.log(`built dist/ with tsc in ${Date.now() - started} ms`);
