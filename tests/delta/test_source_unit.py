"""DeltaSource against a small RequestSink that fails on purpose (a port double, not the core)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from adapters.delta.source import DeltaConfig, DeltaSource
from bridge.daemon import Daemon
from bridge.errors import ConfigError
from bridge.models import RequestIn
from tests.delta.helpers import make_v1_10_workspace
from tests.harness import make_settings, wait_for


class FlakySink:
    """Refuses the first `failures` submits like a locked database would."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.submitted: list[str] = []

    async def submit(self, request: RequestIn, *, source: str, source_ref: dict[str, Any] | None = None,
                     format: str = "native") -> tuple[Any, bool]:
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError("database is locked")
        self.submitted.append(request.external_id or "")
        return None, True

    async def withdraw(self, source: str, external_id: str, reason: str) -> None:
        return None


async def test_store_outage_is_retried_not_lost(tmp_path: Path) -> None:
    make_v1_10_workspace(tmp_path / "ws")
    source = DeltaSource(DeltaConfig.model_validate({"roots": [str(tmp_path / "ws")], "rescan_every": "1h"}))
    sink = FlakySink(failures=1)
    task = asyncio.create_task(source.run(sink))
    try:
        await wait_for(lambda: sink.submitted)
        assert sink.submitted == ["05877c30-33c6-4835-bc3b-b5062d358174"]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.mark.parametrize(
    ("section", "key", "reason"),
    [
        ({"roots": []}, "sources[0].roots", "at least 1"),
        ({"roots": ["  "]}, "sources[0].roots", "cannot be empty"),
        ({"roots": ["/srv/**/workspace"]}, "sources[0].roots", "'**' (any depth) is not supported"),
        ({"resume_command": "delta 'unbalanced"}, "sources[0].resume_command", "cannot be split"),
        ({"rescan_every": "soon"}, "sources[0].rescan_every", "duration"),
        ({"root": ["/srv"]}, "sources[0].root", "unknown key"),
    ],
)
async def test_bad_config_names_the_key(tmp_path: Path, section: dict[str, Any], key: str, reason: str) -> None:
    daemon = Daemon(make_settings(tmp_path, {"sources": [{"type": "delta", **section}]}))
    with pytest.raises(ConfigError) as err:
        await daemon.start()
    await daemon.store.close()
    assert err.value.key == key
    assert reason in err.value.reason
