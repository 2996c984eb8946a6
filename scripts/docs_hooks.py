"""MkDocs hooks (mkdocs.yml `hooks:`): the pages that are not files under docs/.

- index.md is the repository's README.md, its links into docs/ made relative to the site;
- reference/*.md are generated from the code (scripts/gen_reference.py) at every build, so
  they are always the running code's keys, API, verbs and metrics.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]


def readme_as_index(text: str) -> str:
    """README.md's links as the site's home page sees them: `docs/x.md` → `x.md`."""
    return re.sub(r"\]\(docs/", "](", text)


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "scripts" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_files(files: Files, config: MkDocsConfig) -> Files:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=readme_as_index(readme)))
    for path, text in _generator().pages().items():
        files.append(File.generated(config, path, content=text))
    return files


def on_serve(server: Any, config: MkDocsConfig, builder: Any) -> Any:
    server.watch(str(ROOT / "README.md"))
    return server
