"""source:<name> in /readyz, doctor and /metrics: degraded while its engine is unreachable,
failing once its run loop has kept crashing for the stall threshold, ok again after."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from starlette.routing import BaseRoute

from bridge.doctor import diagnose, render_text
from bridge.health import Health, Status
from bridge.ports import Outcome, RequestSink
from bridge.source_watch import SourceWatch
from tests.harness import make_settings, running_bridge, wait_for


class CrashingEngineSource:
    """A Source (the port) whose run loop raises until told not to: a stand-in for an
    adapter with a bug, to drive the real SourceWatch."""

    name = "flaky"

    def __init__(self) -> None:
        self.crash = True
        self.runs = 0

    async def run(self, sink: RequestSink) -> None:
        self.runs += 1
        if self.crash:
            raise RuntimeError("cannot parse the engine's listing")
        await asyncio.Event().wait()

    async def deliver(self, outcome: Outcome) -> None:
        raise AssertionError("not used")

    def http_routes(self) -> list[BaseRoute]:
        return []


async def test_a_crashing_run_loop_is_degraded_then_failing_then_recovers() -> None:
    now = [0.0]
    health = Health()
    source = CrashingEngineSource()
    watch = SourceWatch(source, health, stall_after_s=60, healthy_after_s=30, first_restart_s=0.001,
                        clock=lambda: now[0])
    task = asyncio.create_task(watch.run(health))  # type: ignore[arg-type]  # run() never touches the sink
    try:
        await wait_for(lambda: source.runs >= 2)
        ready, checks = await health.ready()
        assert ready and checks[0].status is Status.degraded
        assert checks[0].summary.startswith("its run loop crashed (RuntimeError: cannot parse the engine's listing)")
        now[0] = 61.0
        ready, checks = await health.ready()
        assert not ready and checks[0].status is Status.failing
        assert checks[0].summary.startswith("stalled: its run loop crashed ")
        assert "fix the source's config or its engine" in checks[0].fix
        source.crash = False
        runs = source.runs
        await wait_for(lambda: source.runs > runs)  # restarted, and running now
        now[0] = 61.0 + 31
        ready, checks = await health.ready()
        assert ready and checks[0].status is Status.ok and checks[0].summary == "running"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_an_unreachable_engine_is_degraded_not_failing_and_doctor_fails_it(tmp_path: Path) -> None:
    engine = {"type": "mastra", "base_url": "http://127.0.0.1:1", "workflows": ["deploy"], "poll_every": "50ms"}
    config: dict[str, Any] = {"sources": [{"type": "webhook"}, engine]}
    async with running_bridge(tmp_path, config) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as http:
        async def degraded() -> dict[str, Any] | None:
            body = (await http.get("/readyz")).json()
            return next((c for c in body["checks"] if c["component"] == "source:mastra"
                         and c["status"] == "degraded"), None)

        check = await wait_for(degraded)
        assert check["summary"] == "1 problem(s): wf:deploy: connection refused or unreachable"
        assert (await http.get("/readyz")).status_code == 200  # the bridge works: still ready
        metrics = (await http.get("/metrics")).text
        assert 'hitl_health_status{component="source:mastra",status="degraded"} 1.0' in metrics
    settings = make_settings(tmp_path, {**config, "http": {"listen": "127.0.0.1:1"}})
    lines = render_text(await diagnose(settings)).splitlines()
    assert ("[FAIL] source mastra: http://127.0.0.1:1 unreachable (ConnectError) — fix: start the engine, or fix "
            "the base_url of source 'mastra'") in lines
    assert "[ok] source webhook: no engine URL to reach" in lines


async def test_doctor_shows_the_running_daemons_readiness(tmp_path: Path) -> None:
    engine = {"type": "mastra", "base_url": "http://127.0.0.1:1", "workflows": ["deploy"], "poll_every": "50ms"}
    async with running_bridge(tmp_path, {"sources": [engine]}) as daemon:
        await wait_for(lambda: daemon.sources[0].problems)  # type: ignore[attr-defined]
        settings = make_settings(tmp_path, {"sources": [engine], "http": {"listen": f"127.0.0.1:{daemon.port}"}})
        lines = render_text(await diagnose(settings)).splitlines()
    assert f"[ok] daemon: answering at http://127.0.0.1:{daemon.port}" in lines
    assert "[ok] daemon readyz: ready" in lines
    assert ("[warn] daemon source:mastra: 1 problem(s): wf:deploy: connection refused or unreachable — fix: "
            "GET /v1/sources lists each one with its reason") in lines
    assert "[FAIL] source mastra: 1 problem(s): wf:deploy: connection refused or unreachable" in lines
