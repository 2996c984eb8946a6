"""One daemon for the CLI tests, started as an operator starts it, in its own folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.helpers import LEAD, OPS, Served


@pytest.fixture(scope="package")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("daemon-home")
    served = Served(home, {
        "store": {"url": f"sqlite:///{home}/bridge.db"},
        "http": {"listen": "127.0.0.1:0", "api_tokens": {"ops": OPS, "lead": {"token": LEAD, "act_for_others": True}}},
        "sources": [{"type": "webhook"}],
        "people": {"ana": ["api:ana"], "bo": ["api:bo"]},  # whom the lead token may answer for
        "routes": [{"match": {"labels.team": "two"}, "notify": ["web"], "quorum": 2}],
    })
    yield served.started()
    assert served.stop() == 0


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A folder with no config and no store: the CLI must find the daemon by URL alone."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder
