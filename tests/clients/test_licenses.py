"""Each client package carries the project's license text (Apache-2.0) in what it publishes."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_says_apache_2_and_carries_the_same_text() -> None:
    text = (ROOT / "LICENSE").read_bytes()
    assert b"Apache License" in text and b"Version 2.0, January 2004" in text
    for copy in ("clients/python/LICENSE", "clients/typescript/LICENSE"):
        assert (ROOT / copy).read_bytes() == text, f"{copy} differs from LICENSE: copy it again"
    for pyproject in ("pyproject.toml", "clients/python/pyproject.toml"):
        assert tomllib.loads((ROOT / pyproject).read_text())["project"]["license"] == {"text": "Apache-2.0"}
    package = json.loads((ROOT / "clients/typescript/package.json").read_text())
    assert package["license"] == "Apache-2.0" and "LICENSE" in package["files"]
