"""axe-core for the inbox's accessibility checks: installed from the npm registry (the
version pinned in tests/web/axe/package-lock.json) on first use into a cache outside the
checkout, `$XDG_CACHE_HOME/hitl-bridge/axe-<hash of package.json and lockfile>`, then
injected into pages with Playwright's `add_script_tag(path=…)`.

Without node/npm the checks are skipped with that reason. Run
`python -m tests.web.axe` to install ahead of the tests (scripts/test does).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.engines.mastra_server import BuildFailed, NodeMissing
from tests.npm_cache import installed

APP = Path(__file__).parent / "axe"
#: the impacts that fail a page (axe's scale: minor, moderate, serious, critical)
FAILING = ("serious", "critical")
SCRIPT = "node_modules/axe-core/axe.min.js"


def install() -> Path:
    """The path of axe.min.js, installed with `npm ci` on first use. Raises NodeMissing or
    BuildFailed."""
    return installed(APP, "axe", SCRIPT, "axe-core for the accessibility checks") / SCRIPT


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
