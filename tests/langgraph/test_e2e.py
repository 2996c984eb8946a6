"""End to end: a real LangGraph server pauses → bridge request → answer through the HTTP API
→ the graph resumes with exactly that answer. Plus engine failures and resolution elsewhere."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from hitl_bridge_client import verify_receipt

from adapters.langgraph.source import LangGraphSource
from bridge.daemon import Daemon
from tests.harness import running_bridge, wait_for
from tests.langgraph.conftest import LangGraphServer
from tests.langgraph.engine import Engine
from tests.langgraph.proxy import fault_proxy

OPEN = ("pending", "posted")


@asynccontextmanager
async def bridge_on(tmp_path: Path, url: str, engine: Engine, **source: Any) -> AsyncIterator[Daemon]:
    config = {
        "sources": [{"type": "langgraph", "base_url": url, "poll_every": "50ms", "timeout": "1s",
                     "metadata": {"test": engine.tag}, **source}],
        "delivery": {"first_retry": "50ms", "max_backoff": "200ms", "timeout": "3s"},
    }
    async with running_bridge(tmp_path, config) as daemon:
        yield daemon


def source_of(daemon: Daemon) -> LangGraphSource:
    source = daemon.service.sources["langgraph"]
    assert isinstance(source, LangGraphSource)
    return source


async def requests_of(daemon: Daemon, thread_id: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=daemon.base_url) as http:
        reply = await http.get("/v1/requests", params={"source": "langgraph"})
    return [r for r in reply.raise_for_status().json()["requests"] if r["run_id"] == thread_id]


async def open_request(daemon: Daemon, thread_id: str, count: int = 1) -> list[dict[str, Any]]:
    async def found() -> list[dict[str, Any]] | None:
        rows = [r for r in await requests_of(daemon, thread_id) if r["state"] in OPEN]
        return rows if len(rows) >= count else None

    rows: list[dict[str, Any]] = await wait_for(found, timeout=15)
    return sorted(rows, key=lambda r: r["created_at"])


async def answer(daemon: Daemon, request_id: str, **body: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=daemon.base_url) as http:
        reply = await http.post(f"/v1/requests/{request_id}/answer", json=body)
    assert reply.status_code == 200, reply.text
    data: dict[str, Any] = reply.json()
    return data


async def show(daemon: Daemon, request_id: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=daemon.base_url) as http:
        reply = await http.get(f"/v1/requests/{request_id}")
    data: dict[str, Any] = reply.raise_for_status().json()
    return data


async def state_is(daemon: Daemon, request_id: str, state: str) -> bool:
    return (await show(daemon, request_id))["state"] == state


async def resumed_with(engine: Engine, thread_id: str) -> list[Any]:
    answers: list[Any] = await wait_for(lambda: engine.answers_when_idle(thread_id), timeout=15)
    return answers


# -- the happy paths, one per interrupt shape ---------------------------------------------


async def test_plain_interrupt_roundtrip(tmp_path: Path, langgraph_server: LangGraphServer,
                                         engine: Engine) -> None:
    thread_id = await engine.start("once", {"topic": "v2.1"})
    async with bridge_on(tmp_path, langgraph_server.url, engine) as daemon:
        [request] = await open_request(daemon, thread_id)
        assert request["title"] == "What should the notes say about v2.1?"
        assert request["engine"] == "langgraph" and request["agent"] == "once"
        assert request["labels"]["team"] == "ops"
        assert [q["kind"] for q in request["questions"]] == ["text"]
        await answer(daemon, request["id"], value="Faster builds, fewer bugs")
        assert await resumed_with(engine, thread_id) == ["Faster builds, fewer bugs"]
        await wait_for(lambda: state_is(daemon, request["id"], "delivered"))
        # the resume run keeps the signed receipt in its metadata, where LangGraph keeps it
        runs = (await engine.http.get(f"/threads/{thread_id}/runs")).json()
        [receipt] = [r["metadata"]["hitl_bridge_receipt"] for r in runs
                     if (r.get("metadata") or {}).get("hitl_bridge_request_id") == request["id"]]
        claims = verify_receipt(receipt, await daemon.service.notary.keys.jwks())
        assert claims["sub"] == request["id"] and claims["values"] == {"answer": "Faster builds, fewer bugs"}


async def test_interrupted_twice_becomes_two_requests(tmp_path: Path, langgraph_server: LangGraphServer,
                                                      engine: Engine) -> None:
    thread_id = await engine.start("twice")
    async with bridge_on(tmp_path, langgraph_server.url, engine) as daemon:
        [first] = await open_request(daemon, thread_id)
        assert first["title"] == "Which environment?"
        await answer(daemon, first["id"], value="prod")
        [second] = await open_request(daemon, thread_id)
        assert second["id"] != first["id"]
        assert second["title"] == "Deploy to prod: which version?"
        await answer(daemon, second["id"], value="2.1.0")
        assert await resumed_with(engine, thread_id) == ["prod", "2.1.0"]
        await wait_for(lambda: state_is(daemon, second["id"], "delivered"))
        assert await state_is(daemon, first["id"], "delivered")
        assert len(await requests_of(daemon, thread_id)) == 2


async def test_each_value_shape_resumes_with_exactly_the_answer(
    tmp_path: Path, langgraph_server: LangGraphServer, engine: Engine
) -> None:
    """plain dict, agent-inbox (edit / respond / ignore), action_requests + review_configs, and
    a hostile value (200 kB, nested 60 deep, wrong types) that still becomes a text question:
    run side by side in one bridge (LangGraph takes ~1 s per run; this keeps the suite fast)."""
    cases: list[tuple[str, dict[str, Any], dict[str, str], Any]] = [
        ("plain_dict", {"value": "feature/hitl"}, {"answer": "text"}, "feature/hitl"),
        ("inbox", {"values": {"decision": "Edit", "args": {"command": "pwd"}}},
         {"decision": "choice", "response": "text", "args": "edit"},
         {"type": "edit", "args": {"action": "run_command", "args": {"command": "pwd"}}}),
        ("inbox", {"values": {"decision": "Respond", "response": "use ls -la"}},
         {"decision": "choice", "response": "text", "args": "edit"},
         {"type": "response", "args": "use ls -la"}),
        ("inbox_accept_ignore", {"value": "no"}, {"decision": "confirm"},
         {"type": "ignore", "args": None}),
        ("review", {"reason": "never on a Friday", "values": {
            "decision_0": "Edit", "args_0": {"path": "NOTES.md", "text": "hello"}, "decision_1": "no"}},
         {"decision_0": "choice", "args_0": "edit", "message_0": "text", "decision_1": "confirm"},
         {"decisions": [
             {"type": "edit", "edited_action": {"name": "write_file",
                                                "args": {"path": "NOTES.md", "text": "hello"}}},
             {"type": "reject", "message": "never on a Friday"}]}),
        ("hostile", {"value": "shown as text"}, {"answer": "text"}, "shown as text"),
    ]
    threads = await asyncio.gather(*(engine.start(graph) for graph, *_ in cases))
    async with bridge_on(tmp_path, langgraph_server.url, engine) as daemon:
        for thread_id, (graph, body, kinds, _) in zip(threads, cases, strict=True):
            [request] = await open_request(daemon, thread_id)
            assert {q["id"]: q["kind"] for q in request["questions"]} == kinds, graph
            await answer(daemon, request["id"], **body)
        for thread_id, (graph, _, _, expected) in zip(threads, cases, strict=True):
            assert await resumed_with(engine, thread_id) == [expected], graph
        request = (await requests_of(daemon, threads[0]))[0]
        assert request["questions"][0]["prompt"] == "Name the new branch"
        assert request["context"]["interrupt"] == {"question": "Name the new branch", "hint": "feature/..."}
        assert (await requests_of(daemon, threads[1]))[0]["tool"] == "run_command"
        hostile = (await requests_of(daemon, threads[-1]))[0]
        assert isinstance(hostile["context"]["interrupt"], str)  # too big/deep: kept as a clipped string
        assert len(hostile["questions"][0]["prompt"]) < 10_000


async def test_parallel_interrupts_are_answered_separately(
    tmp_path: Path, langgraph_server: LangGraphServer, engine: Engine
) -> None:
    thread_id = await engine.start("parallel")
    async with bridge_on(tmp_path, langgraph_server.url, engine) as daemon:
        rows = await open_request(daemon, thread_id, count=2)
        by_title = {r["title"]: r for r in rows}
        await answer(daemon, by_title["Right branch: go?"]["id"], value="right-yes")
        await wait_for(lambda: state_is(daemon, by_title["Right branch: go?"]["id"], "delivered"))
        assert await engine.answers_when_idle(thread_id) is None  # still waits for the left one
        await answer(daemon, by_title["Left branch: go?"]["id"], value="left-yes")
        assert sorted(await resumed_with(engine, thread_id)) == ["left-yes", "right-yes"]


# -- resolved elsewhere ---------------------------------------------------------------------


async def test_resumed_or_deleted_outside_the_bridge_cancels_the_request(
    tmp_path: Path, langgraph_server: LangGraphServer, engine: Engine
) -> None:
    resumed, deleted = await asyncio.gather(engine.start("once"), engine.start("once"))
    async with bridge_on(tmp_path, langgraph_server.url, engine) as daemon:
        [request] = await open_request(daemon, resumed)
        [gone] = await open_request(daemon, deleted)
        await engine.resume_directly(resumed, "once", "answered in Studio")
        await engine.delete(deleted)
        await wait_for(lambda: state_is(daemon, request["id"], "cancelled"))
        await wait_for(lambda: state_is(daemon, gone["id"], "cancelled"))
        assert "resumed outside the bridge" in (await show(daemon, request["id"]))["error"]
        assert "deleted" in (await show(daemon, gone["id"]))["error"]
        assert await engine.answers_when_idle(resumed) == ["answered in Studio"]


async def test_resolved_while_the_bridge_was_down_is_cancelled_at_start(
    tmp_path: Path, langgraph_server: LangGraphServer, engine: Engine
) -> None:
    thread_id = await engine.start("once")
    async with bridge_on(tmp_path, langgraph_server.url, engine) as daemon:
        [request] = await open_request(daemon, thread_id)
    await engine.resume_directly(thread_id, "once", "done by hand")
    async with bridge_on(tmp_path, langgraph_server.url, engine) as daemon:
        await wait_for(lambda: state_is(daemon, request["id"], "cancelled"))


async def test_answer_for_an_interrupt_resolved_elsewhere_fails_visibly(
    tmp_path: Path, langgraph_server: LangGraphServer, engine: Engine
) -> None:
    thread_id = await engine.start("once")
    async with fault_proxy(langgraph_server.url) as proxy, \
            bridge_on(tmp_path, proxy.url, engine) as daemon:
        [request] = await open_request(daemon, thread_id)
        proxy.mode = "fail_resume"  # keep our answer from landing ...
        await answer(daemon, request["id"], value="late")
        await wait_for(lambda: proxy.resume_calls() >= 1)
        await engine.resume_directly(thread_id, "once", "first")  # ... while someone else resumes
        proxy.mode = "ok"
        await wait_for(lambda: state_is(daemon, request["id"], "failed"))
        shown = await show(daemon, request["id"])
        assert "no longer waits" in shown["error"]
        assert await engine.answers_when_idle(thread_id) == ["first"]  # never resumed twice


# -- engine failures -------------------------------------------------------------------------


async def test_resume_errors_are_retried_until_the_engine_accepts(
    tmp_path: Path, langgraph_server: LangGraphServer, engine: Engine
) -> None:
    thread_id = await engine.start("once")
    async with fault_proxy(langgraph_server.url) as proxy, \
            bridge_on(tmp_path, proxy.url, engine) as daemon:
        [request] = await open_request(daemon, thread_id)
        proxy.mode = "garbage"
        await answer(daemon, request["id"], value="eventually")

        async def failing_with(error: str) -> dict[str, Any] | None:
            shown = await show(daemon, request["id"])
            outbox = shown["outbox"]
            return shown if outbox and error in (outbox[0]["last_error"] or "") else None

        shown = await wait_for(lambda: failing_with("not JSON"))
        assert shown["state"] == "answered"
        proxy.mode = "fail_resume"
        shown = await wait_for(lambda: failing_with("HTTP 500"))
        assert shown["state"] == "answered" and shown["outbox"][0]["attempts"] >= 2
        async with httpx.AsyncClient(base_url=daemon.base_url) as http:
            metrics = (await http.get("/metrics")).text
        assert 'hitl_outbox_failing{source="langgraph"} 1.0' in metrics
        proxy.mode = "ok"
        assert await resumed_with(engine, thread_id) == ["eventually"]
        await wait_for(lambda: state_is(daemon, request["id"], "delivered"))


async def test_answer_survives_a_restart_while_the_engine_fails(
    tmp_path: Path, langgraph_server: LangGraphServer, engine: Engine
) -> None:
    thread_id = await engine.start("once")
    async with fault_proxy(langgraph_server.url) as proxy:
        async with bridge_on(tmp_path, proxy.url, engine) as daemon:
            [request] = await open_request(daemon, thread_id)
            proxy.mode = "fail_resume"
            await answer(daemon, request["id"], value="after the restart")
            await wait_for(lambda: proxy.resume_calls() >= 1)
        proxy.mode = "ok"
        async with bridge_on(tmp_path, proxy.url, engine) as daemon:
            assert await resumed_with(engine, thread_id) == ["after the restart"]
            await wait_for(lambda: state_is(daemon, request["id"], "delivered"))


async def test_lost_resume_reply_is_not_resumed_twice(
    tmp_path: Path, langgraph_server: LangGraphServer, engine: Engine
) -> None:
    thread_id = await engine.start("twice")
    async with fault_proxy(langgraph_server.url) as proxy, \
            bridge_on(tmp_path, proxy.url, engine) as daemon:
        [request] = await open_request(daemon, thread_id)
        proxy.mode, proxy.delay_s = "slow_resume", 1.5  # run starts upstream, reply too late
        await answer(daemon, request["id"], value="staging")
        await wait_for(lambda: proxy.resume_calls() >= 1)

        async def resumed_upstream() -> bool:
            return await engine.interrupt_ids(thread_id) != [request["external_id"].split(":")[1]]

        await wait_for(resumed_upstream, timeout=15)
        proxy.mode = "ok"
        await wait_for(lambda: state_is(daemon, request["id"], "delivered"), timeout=15)
        [second] = [r for r in await open_request(daemon, thread_id) if r["id"] != request["id"]]
        assert second["title"] == "Deploy to staging: which version?"  # "staging" landed once
        await answer(daemon, second["id"], value="1.0")
        assert await resumed_with(engine, thread_id) == ["staging", "1.0"]


async def test_engine_down_or_garbage_while_polling(
    tmp_path: Path, langgraph_server: LangGraphServer, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    thread_id = await engine.start("once")
    async with fault_proxy(langgraph_server.url) as proxy:
        proxy.mode, proxy.delay_s = "down", 1.5  # slow: longer than the source's 1 s timeout
        async with bridge_on(tmp_path, proxy.url, engine) as daemon:
            source = source_of(daemon)
            for mode, expected in (("down", "HTTP 503"), ("garbage", "not JSON"),
                                   ("garbage_json", "did not return a list"), ("slow", "timed out")):
                proxy.mode = mode
                await wait_for(lambda expected=expected: expected in (source.last_error or ""))
                assert await requests_of(daemon, thread_id) == []
                async with httpx.AsyncClient(base_url=daemon.base_url) as http:
                    assert (await http.get("/healthz")).status_code == 200
                    shown = (await http.get("/v1/sources")).json()["sources"][0]["problems"]
                    assert shown[0]["where"] == "poll" and expected in shown[0]["reason"]
            proxy.mode = "ok"  # the engine comes back: the next poll finds the interrupt
            await open_request(daemon, thread_id)
            assert source.last_error is None
    assert any("poll failed" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


async def test_api_key_is_sent_and_never_logged(
    tmp_path: Path, langgraph_server: LangGraphServer, engine: Engine,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("LG_TEST_KEY", "lsv2-very-secret-key")
    caplog.set_level(logging.DEBUG)
    thread_id = await engine.start("once")
    async with fault_proxy(langgraph_server.url) as proxy, \
            bridge_on(tmp_path, proxy.url, engine, api_key_env="LG_TEST_KEY") as daemon:
        proxy.mode = "down"
        await wait_for(lambda: source_of(daemon).last_error is not None)
        proxy.mode = "ok"
        await open_request(daemon, thread_id)
        assert proxy.api_keys and set(proxy.api_keys) == {"lsv2-very-secret-key"}
    assert "lsv2-very-secret-key" not in caplog.text
