"""What the client packages publish: the license text (Apache-2.0), one version, no runtime
dependencies in TypeScript, and the daemon pinned to the Python client of this checkout."""

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


def test_the_daemon_holds_no_copy_of_the_client() -> None:
    import hitl_bridge_client

    import bridge.client

    assert bridge.client.Client is hitl_bridge_client.Client and bridge.client.ask is hitl_bridge_client.ask
    assert set(bridge.client.__all__) == set(hitl_bridge_client.__all__)
    assert len((ROOT / "bridge/client.py").read_text().splitlines()) < 10


def test_one_version_everywhere_and_the_daemon_pins_it() -> None:
    import re

    import hitl_bridge_client
    from hitl_bridge_client import transport

    project = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())
    assert project["project"]["dynamic"] == ["version"] and "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "hitl_bridge_client._version.__version__"}
    version = re.search(r'__version__ = "([^"]+)"',
                        (ROOT / "clients/python/src/hitl_bridge_client/_version.py").read_text()).group(1)  # type: ignore[union-attr]
    daemon = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"hitl-bridge-client=={version}" in daemon, "pin the daemon to the client version it ships with"
    assert hitl_bridge_client.__version__ == transport.VERSION == version
    package = json.loads((ROOT / "clients/typescript/package.json").read_text())
    ts = (ROOT / "clients/typescript/src/transport.ts").read_text()
    assert package["version"] == version and re.search(rf'VERSION = "{re.escape(version)}"', ts)
    assert "dependencies" not in package, "the TypeScript client has no runtime dependencies"
