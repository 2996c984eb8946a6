"""Assemble README.md from docs/readme/*.md (the core's first half, each capability, the
core's CLI/HTTP half, operations, then the developer notes).

Run: python scripts/build_readme.py          (writes README.md)
     python scripts/build_readme.py --check  (exit 1 when README.md is out of date)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ROOT / "docs" / "readme"
CAPABILITIES = ["web", "slack", "telegram", "email", "timing", "people", "delta", "langgraph", "engines", "mcp",
                "store"]
SPLIT = "## CLI"  # where the core's second half starts


def assemble() -> str:
    core = (PARTS / "00-core.md").read_text(encoding="utf-8").splitlines(keepends=True)
    split = next(n for n, line in enumerate(core) if line.startswith(SPLIT))
    parts = ["".join(core[:split])]
    parts += [(PARTS / f"{name}.md").read_text(encoding="utf-8") for name in CAPABILITIES]
    parts += ["".join(core[split:]), (PARTS / "operations.md").read_text(encoding="utf-8"),
              (PARTS / "zz-dev.md").read_text(encoding="utf-8")]
    return "\n".join(parts)


def main() -> int:
    text = assemble()
    readme = ROOT / "README.md"
    if "--check" in sys.argv[1:]:
        if readme.read_text(encoding="utf-8") != text:
            print("README.md is out of date: run python scripts/build_readme.py", file=sys.stderr)
            return 1
        return 0
    readme.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
