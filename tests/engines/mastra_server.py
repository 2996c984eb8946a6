"""A real Mastra server for the tests: the app in tests/engines/mastra_app, installed from the
pinned lockfile and built with the released `mastra` CLI on first use, then served on
127.0.0.1.

The install and build live outside the checkout, in
`$XDG_CACHE_HOME/hitl-bridge/mastra-<hash>` (default `~/.cache/…`), keyed by a hash of the
app's package.json, lockfile and sources: a clean checkout builds once, later runs reuse it.
A file lock keeps two test processes from building at the same time; a build that fails
leaves nothing behind that looks finished. Run `python -m tests.engines.mastra_server` to
build ahead of the tests (scripts/test does).

Everything that would reach the internet at run time is switched off
(`MASTRA_TELEMETRY_DISABLED`); installing needs only the npm registry.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.processes import wait_until_serving

APP = Path(__file__).parent / "mastra_app"
START_DEADLINE_S = 60.0
STEP_DEADLINE_S = 900.0
OFFLINE_ENV = {
    "MASTRA_TELEMETRY_DISABLED": "1",
    "npm_config_update_notifier": "false",
    "npm_config_fund": "false",
    "npm_config_audit": "false",
    "NO_COLOR": "1",
}


class NodeMissing(RuntimeError):
    """node or npm is not installed: the Mastra tests cannot run here (they are skipped)."""


class BuildFailed(RuntimeError):
    """Installing or building the test app failed (the message ends with the log's tail)."""


def app_files() -> list[Path]:
    files = [APP / "package.json", APP / "package-lock.json"]
    files += sorted(p for p in (APP / "src").rglob("*") if p.is_file())
    return files


def app_key() -> str:
    digest = hashlib.sha256()
    for path in app_files():
        digest.update(str(path.relative_to(APP)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hitl-bridge"


def tools() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise NodeMissing("node and npm are needed to build the Mastra test app (Node 20 or later)")
    found = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    major = found.lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 20:
        raise BuildFailed(f"the Mastra test app needs Node 20 or later; found {found or 'an unknown version'}")
    return node, npm


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(OFFLINE_ENV)
    return env


def _run(cmd: list[str], cwd: Path, log: Path, what: str, **extra_env: str) -> float:
    started = time.monotonic()
    env = {**_env(), **extra_env}
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(cmd)}\n".encode())
        out.flush()
        try:
            done = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=STEP_DEADLINE_S, check=False)
        except subprocess.TimeoutExpired:
            raise BuildFailed(f"{what} took longer than {STEP_DEADLINE_S:.0f} s:\n{tail(log)}") from None
    if done.returncode != 0:
        raise BuildFailed(f"{what} failed (exit {done.returncode}):\n{tail(log)}")
    return time.monotonic() - started


def tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # blocks while another process builds
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prepare() -> tuple[Path, dict[str, float]]:
    """The built server entry (`…/.mastra/output/index.mjs`) and how long building took
    (empty when it was cached). Raises NodeMissing or BuildFailed."""
    _, npm = tools()
    key = app_key()
    root = cache_root()
    final = root / f"mastra-{key}"
    entry = final / ".mastra" / "output" / "index.mjs"
    with _locked(root / f"mastra-{key}.lock"):
        if (final / "READY").exists() and entry.exists():
            return entry, {}
        shutil.rmtree(final, ignore_errors=True)
        work = root / f"mastra-{key}.building"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        for path in app_files():
            target = work / path.relative_to(APP)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        log = work / "build.log"
        # --ignore-scripts: no package needs its install script (esbuild and libsql ship their
        # binaries as optional platform packages), and none of them runs code at install time
        install_s = _run([npm, "install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                         work, log, "npm install (Mastra test app)")
        mastra_cli = work / "node_modules" / ".bin" / "mastra"
        # the output runs on this node_modules (Node resolves packages from parent folders), so
        # the CLI's second install into the output folder is skipped
        build_s = _run([str(mastra_cli), "build", "--dir", "src/mastra"], work, log,
                       "mastra build (Mastra test app)", MASTRA_BUILD_SKIP_INSTALL="1")
        if not (work / ".mastra" / "output" / "index.mjs").exists():
            raise BuildFailed(f"mastra build wrote no .mastra/output/index.mjs:\n{tail(log)}")
        timings = {"install_s": round(install_s, 1), "build_s": round(build_s, 1)}
        (work / "READY").write_text(json.dumps(timings))
        work.rename(final)
        return entry, timings


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class MastraServer:
    """`node .mastra/output/index.mjs` of the built test app, on 127.0.0.1:<free port>."""

    def __init__(self, entry: Path, log_path: Path) -> None:
        self.entry = entry
        self.log_path = log_path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        node, _ = tools()
        env = _env()
        env.update({"PORT": str(self.port), "MASTRA_HOST": "127.0.0.1", "NODE_ENV": "production"})
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen([node, str(self.entry)], cwd=self.entry.parent, env=env,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until_serving(self.process, f"{self.url}/api/workflows", within=START_DEADLINE_S,
                               what="the Mastra server", log_tail=lambda: tail(self.log_path))
        except RuntimeError:
            self.stop()
            raise

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)


def main() -> int:
    """Build the test app ahead of the tests; prints what it did. Exit 0 also without npm."""
    try:
        started = time.monotonic()
        entry, timings = prepare()
    except NodeMissing as exc:
        print(f"mastra test app: skipped ({exc})")
        return 0
    except BuildFailed as exc:
        print(f"mastra test app: {exc}", file=sys.stderr)
        return 1
    if timings:
        print(f"mastra test app: built in {time.monotonic() - started:.0f} s "
              f"(npm install {timings['install_s']:.0f} s, mastra build {timings['build_s']:.0f} s) → {entry.parent}")
    else:
        print(f"mastra test app: cached at {entry.parent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
