"""README.md is assembled from docs/readme/*.md; an edit to one without the other fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_is_assembled_from_its_parts() -> None:
    spec = importlib.util.spec_from_file_location("build_readme", ROOT / "scripts" / "build_readme.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "README.md").read_text(encoding="utf-8") == module.assemble(), (
        "README.md is out of date: run python scripts/build_readme.py")
