"""Mastra end to end: a run suspends → bridge request → answer over the HTTP API → the run
resumes with exactly that answer; re-suspension, inbox tasks, paging, failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from adapters.mastra.source import MastraSource
from bridge.daemon import Daemon
from tests.engines.conftest import answer, engine_config, get_request, metrics, open_requests, state_of
from tests.engines.fake_mastra import FakeMastra
from tests.harness import running_bridge, wait_for


def mastra_source(fake: FakeMastra, **extra: Any) -> dict[str, Any]:
    return {
        "type": "mastra",
        "base_url": fake.url,
        "workflows": ["deploy"],
        "poll_every": "50ms",
        "timeout": "1s",
        **extra,
    }


async def _is(bridge: Daemon, request_id: str, state: str) -> bool:
    return await state_of(bridge, request_id) == state


async def one_open(bridge: Daemon, exclude: set[str] | None = None) -> Any:
    async def find() -> Any:
        found = [r for r in await open_requests(bridge, "mastra") if r.id not in (exclude or set())]
        return found[0] if found else None

    return await wait_for(find)


async def test_choice_then_resuspended_form(tmp_path: Path, mastra: FakeMastra) -> None:
    run_id = mastra.suspend(
        "deploy",
        "approve",
        {"question": "Ship v2 to prod?", "options": [{"label": "Ship", "value": "ship"}, "Hold"]},
        then=[("details", {"message": "Release details", "fields": {"version": "Version", "notes": "Notes"}})],
    )
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra))) as bridge:
        req = await one_open(bridge)
        assert req.questions[0].options == ["Ship", "Hold"] and req.run_id == run_id
        await answer(bridge, req.id, {"answer": "Ship"})
        run = mastra.runs["deploy"][run_id]
        await wait_for(lambda: len(run.resumes) == 1)
        assert run.resumes[0] == {"step": "approve", "resumeData": {"answer": "ship"}}
        assert mastra.server.calls_to("POST", "/resume")[0].query == f"runId={run_id}"
        await wait_for(lambda: _is(bridge, req.id, "delivered"))
        form = await one_open(bridge, exclude={req.id})
        assert form.questions[0].kind == "form" and form.tool == "details"
        await answer(bridge, form.id, {"answer": {"version": "2.0", "notes": "fast"}})
        await wait_for(lambda: len(run.resumes) == 2)
        assert run.resumes[1] == {"step": "details", "resumeData": {"version": "2.0", "notes": "fast"}}
        assert run.status == "success"


async def test_inbox_task_is_resumed_with_the_text(tmp_path: Path, mastra: FakeMastra) -> None:
    task_id = mastra.add_task(
        "reviews", {"reason": "needs a summary", "payload": {"question": "Summarise PR 7"}}, title="PR 7"
    )
    source = mastra_source(mastra, workflows=[], inboxes=["reviews"])
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        req = await one_open(bridge)
        assert (req.title, req.questions[0].kind, req.questions[0].prompt) == ("PR 7", "text", "Summarise PR 7")
        await answer(bridge, req.id, {"answer": "Looks good, merge it"})
        task = mastra.tasks["reviews"][task_id]
        await wait_for(lambda: task.resume_payloads == ["Looks good, merge it"])
        await wait_for(lambda: _is(bridge, req.id, "delivered"))


async def test_resumed_elsewhere_is_withdrawn(tmp_path: Path, mastra: FakeMastra) -> None:
    run_id = mastra.suspend("deploy", "approve", {"question": "Go?"})
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra))) as bridge:
        req = await one_open(bridge)
        mastra.finish_elsewhere("deploy", run_id)
        await wait_for(lambda: _is(bridge, req.id, "cancelled"))
        events = [e.kind for e in await bridge.store.list_events(req.id)]
        assert "withdrawn" in events
        assert mastra.server.calls_to("POST", "/resume") == []


async def test_many_waiting_runs_are_listed_in_pages(tmp_path: Path, mastra: FakeMastra) -> None:
    for i in range(300):
        mastra.suspend("deploy", "approve", {"question": f"Run {i}?"})
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, poll_every="100ms"))) as bridge:

        async def all_in() -> bool:
            return len(await bridge.store.list_requests(source="mastra", limit=2000)) == 300

        await wait_for(all_in, timeout=30)
        before = len(mastra.server.calls_to("GET", "/runs"))
        await wait_for(lambda: len(mastra.server.calls_to("GET", "/runs")) >= before + 6)
        pages = [c.query for c in mastra.server.calls_to("GET", "/runs")]
        assert all("perPage=100" in q for q in pages)
        assert {q for q in pages} == {f"status=suspended&page={p}&perPage=100" for p in range(3)}


async def test_snapshot_as_json_text_is_read(tmp_path: Path, mastra: FakeMastra) -> None:
    mastra.snapshot_as_string = True
    mastra.suspend("deploy", "approve", {"prompt": "Text snapshot?", "options": ["a", "b"]})
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra))) as bridge:
        req = await one_open(bridge)
        assert req.questions[0].options == ["a", "b"]


async def test_engine_down_and_erroring_during_resume_is_retried(tmp_path: Path, mastra: FakeMastra) -> None:
    run_id = mastra.suspend("deploy", "approve", {"question": "Go?", "options": ["yes", "no"]})
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra))) as bridge:
        req = await one_open(bridge)
        await mastra.server.stop()
        await answer(bridge, req.id, {"answer": "yes"})

        async def failing() -> bool:
            view = await get_request(bridge, req.id)
            return bool(view["outbox"]) and view["outbox"][0]["attempts"] >= 1

        await wait_for(failing)
        assert 'hitl_outbox_failing{source="mastra"} 1.0' in await metrics(bridge)
        assert await state_of(bridge, req.id) == "answered"
        await mastra.server.start()
        mastra.server.set_faults("error", remaining=1, only_methods=("POST",))
        await wait_for(lambda: _is(bridge, req.id, "delivered"), timeout=15)
        assert mastra.runs["deploy"][run_id].resumes == [{"step": "approve", "resumeData": {"answer": "yes"}}]


async def test_garbage_listing_keeps_requests_open_and_daemon_running(tmp_path: Path, mastra: FakeMastra) -> None:
    mastra.suspend("deploy", "approve", {"question": "Go?"})
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, timeout="300ms"))) as bridge:
        req = await one_open(bridge)
        mastra.server.set_faults("garbage", only_methods=("GET",))
        polls = len(mastra.server.calls_to("GET", "/runs"))
        await wait_for(lambda: len(mastra.server.calls_to("GET", "/runs")) >= polls + 3)
        assert await state_of(bridge, req.id) == "posted"
        mastra.server.set_faults("slow", delay=0.5, only_methods=("GET",))
        await wait_for(lambda: len(mastra.server.calls_to("GET", "/runs")) >= polls + 5)
        assert await state_of(bridge, req.id) == "posted"
        mastra.server.set_faults("ok")
        await answer(bridge, req.id, {"answer": "fine"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"))


async def test_resume_refused_because_run_moved_on_fails_with_reason(tmp_path: Path, mastra: FakeMastra) -> None:
    run_id = mastra.suspend("deploy", "approve", {"question": "Go?"})
    source = mastra_source(mastra, poll_every="1h")  # one poll: the withdrawal is not noticed in time
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        req = await one_open(bridge)
        mastra.finish_elsewhere("deploy", run_id)
        await answer(bridge, req.id, {"answer": "go"})
        await wait_for(lambda: _is(bridge, req.id, "failed"))
        view = await get_request(bridge, req.id)
        assert "no longer waits" in view["error"] and view["outbox"][0]["dead"] is True


async def test_garbage_runs_are_skipped_not_fatal(tmp_path: Path, mastra: FakeMastra) -> None:
    mastra.suspend("deploy", "approve", {"question": "Good one"})
    mastra.add_workflow("other")
    source = mastra_source(mastra, workflows=["deploy", "missing", "other"])
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        req = await one_open(bridge)
        assert req.questions[0].prompt == "Good one"
        src = bridge.sources[0]
        assert isinstance(src, MastraSource)
        await wait_for(lambda: getattr(src, "polls", 0) >= 2)
        # the unknown workflow is reported, the others still work
        assert "HTTP 404" in src.errors["wf:missing"] and set(src.errors) == {"wf:missing"}
        async with httpx.AsyncClient(base_url=bridge.base_url) as http:  # and shown to operators
            shown = (await http.get("/v1/sources")).json()["sources"]
        assert [(s["name"], s["problem_count"]) for s in shown] == [(src.name, 1)]
        assert shown[0]["problems"][0]["where"] == "wf:missing" and "HTTP 404" in shown[0]["problems"][0]["reason"]


async def test_run_resumed_elsewhere_while_the_bridge_was_down_is_withdrawn(tmp_path: Path, mastra: FakeMastra) -> None:
    run_id = mastra.suspend("deploy", "approve", {"question": "Go?"})
    config = engine_config(mastra_source(mastra))
    async with running_bridge(tmp_path, config) as bridge:
        req = await one_open(bridge)
    mastra.finish_elsewhere("deploy", run_id)
    async with running_bridge(tmp_path, config) as bridge:
        await wait_for(lambda: _is(bridge, req.id, "cancelled"))


async def test_slow_resume_that_landed_is_not_sent_to_the_next_suspension(tmp_path: Path, mastra: FakeMastra) -> None:
    """The run re-suspends at the same step; a blind retry would answer the new question."""
    run_id = mastra.suspend("deploy", "loop", {"question": "Round 1?"}, then=[("loop", {"question": "Round 2?"})])
    source = mastra_source(mastra, timeout="200ms", poll_every="1h")
    # the retry comes after the slow first attempt has landed (first retry ≥ 0.8 × 800 ms)
    async with running_bridge(tmp_path, engine_config(source, delivery={"first_retry": "800ms"})) as bridge:
        req = await one_open(bridge)
        mastra.server.set_faults("slow", delay=0.6, remaining=1, only_methods=("POST",))
        await answer(bridge, req.id, {"answer": "first"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"))
        assert mastra.runs["deploy"][run_id].resumes == [{"step": "loop", "resumeData": {"answer": "first"}}]
        assert mastra.runs["deploy"][run_id].status == "suspended"


async def test_garbage_resume_reply_is_retried(tmp_path: Path, mastra: FakeMastra) -> None:
    run_id = mastra.suspend("deploy", "approve", {"question": "Go?"})
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, poll_every="1h"))) as bridge:
        req = await one_open(bridge)
        mastra.server.set_faults("garbage", remaining=1, only_methods=("POST",))
        await answer(bridge, req.id, {"answer": "go"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"))
        assert mastra.runs["deploy"][run_id].resumes == [{"step": "approve", "resumeData": {"answer": "go"}}]


async def test_resume_cut_off_by_the_outbox_timeout_is_checked_before_a_retry(
    tmp_path: Path, mastra: FakeMastra
) -> None:
    run_id = mastra.suspend("deploy", "loop", {"question": "Round 1?"}, then=[("loop", {"question": "Round 2?"})])
    source = mastra_source(mastra, timeout="5s", poll_every="1h")
    config = engine_config(source, delivery={"timeout": "300ms", "first_retry": "800ms"})
    async with running_bridge(tmp_path, config) as bridge:
        req = await one_open(bridge)
        mastra.server.set_faults("slow", delay=0.6, remaining=1, only_methods=("POST",))
        await answer(bridge, req.id, {"answer": "first"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"))
        assert mastra.runs["deploy"][run_id].resumes == [{"step": "loop", "resumeData": {"answer": "first"}}]
