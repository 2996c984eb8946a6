"""Shared fixtures."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tests never read a developer's hitl-bridge.yaml or write .hitl-bridge/ in the repo."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("HITL_BRIDGE") or name in ("SLACK_BOT_TOKEN", "TELEGRAM_BOT_TOKEN", "BRIDGE_API_TOKEN"):
            monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """A CLI run installs the bridge's log handler on the stream pytest captures for that
    test; take it off afterwards, or later tests log into a closed file."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
