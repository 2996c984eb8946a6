"""The code blocks of the documentation, with what the line above each says about it.

A block may be preceded (on the line before its fence) by one HTML comment, invisible on the
page and on GitHub:

- `<!-- snippet: partial -->` on a YAML block: a fragment of a config (checked as YAML only);
- `<!-- not-runnable: <why> -->` on a shell block: not run by the tests, for the reason given.

Everything else is checked in full: YAML blocks with `check-config`, shell blocks of the pages
in RUNNABLE_PAGES by running them (tests/docs/test_shell_snippets.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SHELL = {"sh", "bash", "shell", "console"}
MARKER = re.compile(r"^<!--\s*([a-z-]+)\s*:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)")
INCLUDE = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$')
KNOWN_MARKERS = {"snippet", "not-runnable"}


@dataclass(frozen=True)
class Block:
    page: Path  # relative to ROOT
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    marker: str | None  # "not-runnable", "snippet", or another word (refused by the tests)
    marker_value: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    n = 0
    while n < len(lines):
        opening = FENCE.match(lines[n])
        if not opening:
            n += 1
            continue
        indent, fence, language = opening.groups()
        body: list[str] = []
        end = n + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            body.append(lines[end][len(indent):] if lines[end].startswith(indent) else lines[end])
            end += 1
        above = lines[n - 1].strip() if n > 0 else ""
        marker = MARKER.match(above)
        found.append(Block(page.relative_to(ROOT), n + 1, language.lower(), "\n".join(body) + "\n",
                           marker.group(1) if marker else None, marker.group(2) if marker else None))
        n = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def expand_includes(text: str) -> str:
    """`--8<-- "config/x.yaml"` lines replaced by the file, as the site's snippets extension does."""
    out = []
    for line in text.splitlines(keepends=True):
        include = INCLUDE.match(line)
        out.append((ROOT / include.group(1)).read_text(encoding="utf-8") if include else line)
    return "".join(out)
