"""axe-core for the inbox's accessibility checks: installed from the npm registry (the
version pinned in tests/web/axe/package-lock.json) on first use into a cache outside the
checkout, `$XDG_CACHE_HOME/hitl-bridge/axe-<hash of package.json and lockfile>`, then
injected into pages with Playwright's `add_script_tag(path=…)`.

Without node/npm the checks are skipped with that reason. Run
`python -m tests.web.axe` to install ahead of the tests (scripts/test does).
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.engines.mastra_server import BuildFailed, NodeMissing, cache_root, tail

APP = Path(__file__).parent / "axe"
FILES = ("package.json", "package-lock.json")
#: the impacts that fail a page (axe's scale: minor, moderate, serious, critical)
FAILING = ("serious", "critical")


def key() -> str:
    digest = hashlib.sha256()
    for name in FILES:
        digest.update(name.encode() + b"\0" + (APP / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def install() -> Path:
    """The path of axe.min.js, installed with `npm ci` on first use. Raises NodeMissing or
    BuildFailed."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise NodeMissing("node and npm are needed to install axe-core for the accessibility checks")
    root = cache_root()
    final = root / f"axe-{key()}"
    script = final / "node_modules" / "axe-core" / "axe.min.js"
    root.mkdir(parents=True, exist_ok=True)
    with (root / f"axe-{key()}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be installing it now
        if (final / "READY").exists() and script.exists():
            return script
        work = root / f"axe-{key()}.installing"
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)
        work.mkdir(parents=True)
        for name in FILES:
            shutil.copyfile(APP / name, work / name)
        log = work / "npm.log"
        with log.open("wb") as out:
            done = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                                  cwd=work, stdout=out, stderr=subprocess.STDOUT, timeout=600, check=False)
        if done.returncode != 0 or not (work / "node_modules" / "axe-core" / "axe.min.js").exists():
            raise BuildFailed(f"npm ci (axe-core) failed (exit {done.returncode}):\n{tail(log)}")
        (work / "READY").write_text("ok")
        work.rename(final)
        return script


async def violations(page: Any, script: Path) -> list[dict[str, Any]]:
    """The serious and critical axe violations of the page as it is now (the context needs
    `bypass_csp=True`: the page's CSP allows no injected script)."""
    if not await page.evaluate("typeof window.axe !== 'undefined'"):
        await page.add_script_tag(path=str(script))
    found: list[dict[str, Any]] = await page.evaluate("""async () => {
        const result = await axe.run(document, {resultTypes: ["violations"]});
        return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ") + " :: " + (n.failureSummary || ""))}));
    }""")
    return [v for v in found if v["impact"] in FAILING]


def main() -> int:
    try:
        print(f"axe-core: {install()}")
    except NodeMissing as exc:
        print(f"axe-core: skipped ({exc})")
    except BuildFailed as exc:
        print(f"axe-core: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
