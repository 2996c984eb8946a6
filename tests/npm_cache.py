"""Node packages the tests use, installed from the npm registry (the versions pinned in a
`package-lock.json` kept in the checkout) on first use into a cache outside the checkout:
`$XDG_CACHE_HOME/hitl-bridge/<prefix>-<hash of package.json and lockfile>`.

Used by the inbox's accessibility checks (tests/web/axe.py) and the MCP servers behind the
gateway (tests/gateway/servers.py). Raises NodeMissing without node/npm (the tests that
need them skip with that reason) and BuildFailed when `npm ci` fails.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path

from tests.engines.mastra_server import BuildFailed, NodeMissing, cache_root, tail

FILES = ("package.json", "package-lock.json")


def key(app: Path) -> str:
    digest = hashlib.sha256()
    for name in FILES:
        digest.update(name.encode() + b"\0" + (app / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def installed(app: Path, prefix: str, needed: str, what: str) -> Path:
    """The folder holding `node_modules/` for `app` (its package.json and lockfile), with
    `npm ci` run on first use; `needed` (relative to it) must exist afterwards."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise NodeMissing(f"node and npm are needed to install {what}")
    root = cache_root()
    final = root / f"{prefix}-{key(app)}"
    root.mkdir(parents=True, exist_ok=True)
    with (root / f"{prefix}-{key(app)}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be installing it now
        if (final / "READY").exists() and (final / needed).exists():
            return final
        work = root / f"{prefix}-{key(app)}.installing"
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)
        work.mkdir(parents=True)
        for name in FILES:
            shutil.copyfile(app / name, work / name)
        log = work / "npm.log"
        with log.open("wb") as out:
            done = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                                  cwd=work, stdout=out, stderr=subprocess.STDOUT, timeout=600, check=False)
        if done.returncode != 0 or not (work / needed).exists():
            raise BuildFailed(f"npm ci ({what}) failed (exit {done.returncode}):\n{tail(log)}")
        (work / "READY").write_text("ok")
        work.rename(final)
        return final
