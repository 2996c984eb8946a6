"""Hostile or broken input from engines and intake callers: clear errors, nothing lost,
the daemon and the other requests keep working."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.agentworld.mapping import map_prompt
from adapters.mastra.mapping import step_to_request, suspended_steps
from adapters.teal.mapping import parse_pause, pause_to_request
from tests.engines.conftest import engine_config, open_requests
from tests.engines.fake_agentworld import FakeAgentWorld, select_prompt
from tests.engines.fake_teal import FakeTeal, tool_call
from tests.engines.mastra_engine import MastraEngine
from tests.harness import running_bridge, wait_for


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"k": value}
    return value


def test_deep_arguments_are_shown_as_text_not_refused() -> None:
    pause = parse_pause(FakeTeal().start_task("o", plan=[[tool_call("A", "deep", nested(30))]]))
    assert pause is not None
    request = pause_to_request(pause, agent="a/1")
    shown = request.context["tool_calls"][0]["arguments"]
    assert isinstance(shown, str) and shown.startswith('{"k": {"k"')


def test_deep_mastra_payload_and_agentworld_context_are_flattened() -> None:
    run = {
        "runId": "r",
        "snapshot": {
            "status": "suspended",
            "suspendedPaths": {"s": [0]},
            "context": {"s": {"suspendPayload": {"question": "Q", "blob": nested(40)}}},
        },
    }
    (step,) = suspended_steps("w", run)
    request, _ = step_to_request(step, None, "answer")
    assert isinstance(request.context["details"], str)
    prompt = select_prompt([("a", "Go?", [("1", "One")])], metadata={"blob": nested(40)})
    assert isinstance(map_prompt("w", "c", prompt).request.context["details"], str)


async def test_teal_intake_refuses_bad_labels_and_deep_json(tmp_path: Path, teal: FakeTeal) -> None:
    config = engine_config({"type": "teal", "base_url": teal.base_url}, http={"max_body_bytes": 1024 * 1024})
    async with running_bridge(tmp_path, config) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        reply = teal.start_task("Bearer o", plan=[[tool_call("A", "one", {})]])
        base = {"agent": teal.agent, "version": teal.version, "reply": reply}
        r = await http.post("/v1/sources/teal/pauses", json={**base, "labels": {f"k{i}": "v" for i in range(60)}})
        assert r.status_code == 422 and "labels" in r.json()["detail"]
        deep = b'{"a":' * 50_000 + b"1" + b"}" * 50_000
        r = await http.post("/v1/sources/teal/pauses", content=deep, headers={"content-type": "application/json"})
        assert r.status_code == 400
        r = await http.post("/v1/sources/teal/pauses", json=[1, 2])
        assert r.status_code == 422
        assert (await http.get("/healthz")).status_code == 200
        assert (await http.post("/v1/sources/teal/pauses", json=base)).status_code == 201


@pytest.mark.timeout(600)  # may be the first test to need the Mastra server: it builds the test app once
async def test_mastra_garbage_runs_and_deep_json_do_not_stop_polling(tmp_path: Path, mastra: MastraEngine) -> None:
    await mastra.start("deploy", {"version": "real"})
    good = {"type": "mastra", "base_url": mastra.url, "workflows": ["deploy"], "poll_every": "50ms"}
    async with running_bridge(tmp_path, engine_config(good)) as bridge:
        first = await wait_for(lambda: open_requests(bridge, "mastra"))
        mastra.server.set_faults("error", error_status=200, only_methods=("GET",))
        mastra.server.faults.raw_body = b'{"runs":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        polls = len(mastra.server.calls_to("GET", "/runs"))
        await wait_for(lambda: len(mastra.server.calls_to("GET", "/runs")) >= polls + 3)
        assert [r.id for r in await open_requests(bridge, "mastra")] == [first[0].id]
        mastra.server.faults.raw_body = None
        mastra.server.faults.error_body = {"runs": [{"nope": 1}, "x", {"runId": "r", "snapshot": 5}], "total": 3}
        await wait_for(lambda: len(mastra.server.calls_to("GET", "/runs")) >= polls + 6)
        assert [r.id for r in await open_requests(bridge, "mastra")] == [first[0].id]
        mastra.server.set_faults("ok")
        await mastra.start("deploy", {"version": "second"})
        await wait_for(lambda: _count(bridge, 2))


async def _count(bridge: Any, n: int) -> bool:
    return len(await open_requests(bridge, "mastra")) == n


async def test_agentworld_garbage_prompt_lists(tmp_path: Path, agentworld: FakeAgentWorld) -> None:
    agentworld.ask("ops", "c1", select_prompt([("a", "Pick", [("1", "One")])]))
    source = {
        "type": "agentworld",
        "base_url": agentworld.url + "/api",
        "poll_every": "50ms",
        "worlds": [{"world": "ops", "chats": ["c1"]}],
    }
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        first = await wait_for(lambda: open_requests(bridge, "agentworld"))
        deep = b"[" * 100_000 + b"]" * 100_000
        for body in (
            {"success": True, "hitlPrompts": "nope"},
            {"success": True, "hitlPrompts": [1, {"prompt": 3}]},
            ["x"],
            "deep",
        ):
            agentworld.server.set_faults("error", error_status=200, only_methods=("POST",))
            if body == "deep":
                agentworld.server.faults.raw_body = deep
            else:
                agentworld.server.faults.error_body = body
            calls = len(agentworld.server.calls)
            await wait_for(lambda c=calls: len(agentworld.server.calls) >= c + 2)
            assert [r.id for r in await open_requests(bridge, "agentworld")] == [first[0].id]
