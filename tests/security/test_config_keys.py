"""The new `http.*` keys refuse what cannot work, naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.config import load_settings
from bridge.errors import ConfigError


@pytest.mark.parametrize("hosts", [["example.com:8787"], ["http://example.com"], ["*evil"], ["a/b"], [""]])
def test_bad_allowed_hosts_are_config_errors(tmp_path: Path, hosts: list[str]) -> None:
    (tmp_path / "c.yaml").write_text(f"http:\n  allowed_hosts: {hosts!r}\n")
    with pytest.raises(ConfigError) as err:
        load_settings(str(tmp_path / "c.yaml"), env={})
    assert "http.allowed_hosts" in str(err.value)
