"""Shared fixtures."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

# A suite started in the background (`cmd &`, nohup, some CI runners) inherits SIGINT ignored, and
# an ignored signal stays ignored across exec: the children the tests interrupt (Ctrl-C in the
# terminal inbox, SIGINT to an engine run) would never see it. A handled SIGINT here becomes the
# default again in every child, as in a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
