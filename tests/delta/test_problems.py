"""A mailbox the bridge cannot read is not silent: `GET /v1/sources`, `/metrics`
(`hitl_source_problems`) and `hitl-bridge doctor` name the file and the reason until the
engine fixes it."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import httpx
import pytest

from bridge.cli import run
from tests.delta.bridgekit import delta_bridge, wait_request
from tests.delta.helpers import FIXTURES, make_v1_10_workspace
from tests.harness import wait_for

TEXT_ID = "05877c30-33c6-4835-bc3b-b5062d358174"  # request.text.json of the real engine


async def sources(client: httpx.AsyncClient) -> dict[str, dict[str, object]]:
    response = await client.get("/v1/sources")
    assert response.status_code == 200, response.text
    return {s["name"]: s for s in response.json()["sources"]}


async def test_an_unreadable_mailbox_is_reported_until_fixed(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = make_v1_10_workspace(tmp_path / "agents" / "bad") / "request.json"
    bad.write_bytes(b'{"request_id": "req_1", "prompt": ')  # cut off mid-write, and never finished
    roots = [str(tmp_path / "agents" / "*")]
    async with delta_bridge(tmp_path, roots, settle_time="100ms") as daemon, \
            httpx.AsyncClient(base_url=daemon.base_url) as client:
        async def reported() -> bool:
            return (await sources(client))["delta"]["problem_count"] == 1

        await wait_for(reported)
        delta = (await sources(client))["delta"]
        assert delta["problems"] == [{"where": str(bad), "reason": delta["problems"][0]["reason"]}]  # type: ignore[index]
        assert "JSON" in str(delta["problems"]).upper()
        metrics = (await client.get("/metrics")).text
        assert 'hitl_source_problems{source="delta"} 1.0' in metrics
        inbox = (await client.get("/inbox")).text  # and on top of the web inbox, escaped
        assert "1 engine request cannot be shown" in inbox and f"<code>{bad}</code>" in inbox

        config = tmp_path / "doctor.yaml"
        config.write_text(f"store: {{url: 'sqlite:///{tmp_path}/bridge.db'}}\n"
                          f"http: {{listen: '127.0.0.1:{daemon.port}'}}\n"
                          f"sources: [{{type: delta, roots: ['{roots[0]}']}}]\n")
        assert await asyncio.to_thread(run, ["-c", str(config), "doctor"]) == 1
        out = capsys.readouterr().out
        assert "[FAIL] source delta: 1 problem(s): " + str(bad) in out

        shutil.copy(FIXTURES / "v1.10.1" / "request.text.json", bad)  # the engine writes it again
        await wait_request(daemon, lambda r: r.external_id == TEXT_ID)

        async def cleared() -> bool:
            return (await sources(client))["delta"]["problem_count"] == 0

        await wait_for(cleared)
        assert 'hitl_source_problems{source="delta"} 0.0' in (await client.get("/metrics")).text
        assert "cannot be shown" not in (await client.get("/inbox")).text
        assert await asyncio.to_thread(run, ["-c", str(config), "doctor"]) == 0
        assert "[ok] source delta: every engine request is shown" in capsys.readouterr().out
