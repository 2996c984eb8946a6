"""One truth about a Delta root that does not exist: `source:delta` stays degraded in the one
health registry while the root is missing, and /readyz, /metrics and doctor's view of the
daemon all say so (no "recovered: running" while the folder is still not there)."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from bridge.health import Status
from tests.delta.bridgekit import delta_bridge
from tests.harness import wait_for


async def test_a_missing_root_is_degraded_everywhere_until_it_exists(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "nowhere"
    with caplog.at_level(logging.INFO):
        async with delta_bridge(tmp_path, [str(root / "*")]) as daemon, \
                httpx.AsyncClient(base_url=daemon.base_url) as http:
            health = daemon.service.health
            await wait_for(lambda: health.current("source:delta"))
            for _ in range(3):  # every read runs the probes: none of them may say "running" over it
                ready, checks = await health.ready()
                delta = next(c for c in checks if c.component == "source:delta")
                assert ready and delta.status is Status.degraded and "does not exist" in delta.summary, delta
            readyz = (await http.get("/readyz")).json()
            shown = next(c for c in readyz["checks"] if c["component"] == "source:delta")
            assert shown["status"] == "degraded" and "does not exist" in shown["summary"], readyz
            metrics = (await http.get("/metrics")).text
            assert 'hitl_health_status{component="source:delta",status="degraded"} 1.0' in metrics, metrics
            assert not any("source:delta recovered" in r.getMessage() for r in caplog.records)

            root.mkdir()  # the folder appears: now it is ok, said once
            await wait_for(lambda: health.current("source:delta").status is Status.ok)
            delta = next(c for c in (await health.ready())[1] if c.component == "source:delta")
            assert delta.status is Status.ok
