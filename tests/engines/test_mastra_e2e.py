"""Mastra end to end against a real Mastra server (tests/engines/mastra_app, built from the
pinned npm packages): a run suspends → bridge request built from the step's resume schema →
answer over the HTTP API → the run resumes with exactly that answer. And what Mastra refuses
or does behind the bridge's back: runs finished or resumed elsewhere, the wrong step, answers
that do not fit, paging while runs finish, parallel and nested suspensions, lost replies,
restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.mastra.schema import OTHER
from adapters.mastra.source import MastraSource
from bridge.daemon import Daemon
from bridge.models import Request
from tests.engines.conftest import answer, engine_config, get_request, metrics, open_requests, state_of
from tests.engines.mastra_engine import MastraEngine
from tests.harness import running_bridge, wait_for

# the first test to need the server may build the test app (about a minute, once)
pytestmark = pytest.mark.timeout(600)


def mastra_source(engine: MastraEngine, workflows: list[str], **extra: Any) -> dict[str, Any]:
    return {"type": "mastra", "base_url": engine.url, "workflows": workflows, "poll_every": "50ms",
            "timeout": "2s", **extra}


async def _is(bridge: Daemon, request_id: str, state: str) -> bool:
    return await state_of(bridge, request_id) == state


async def request_for(bridge: Daemon, run_id: str, tool: str | None = None) -> Request:
    """The open request of a run (at `tool`, the step), once the bridge has seen it."""

    async def find() -> Request | None:
        return next((r for r in await open_requests(bridge, "mastra")
                     if r.run_id == run_id and (tool is None or r.tool == tool)), None)

    found: Request = await wait_for(find)
    return found


async def failed_with(bridge: Daemon, request_id: str) -> str:
    await wait_for(lambda: _is(bridge, request_id, "failed"))
    view = await get_request(bridge, request_id)
    return str(view["error"])


async def test_decision_with_reason_then_notes_as_a_second_request(tmp_path: Path, mastra: MastraEngine) -> None:
    run_id = await mastra.start("deploy", {"version": "v2"})
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, ["deploy"]))) as bridge:
        req = await request_for(bridge, run_id)
        (q,) = req.questions
        assert (q.id, q.kind, q.prompt) == ("approved", "confirm", "Ship v2?")
        assert req.description == "A person approves the release"
        assert req.context["details"] == {"version": "v2"} and req.tool == "approve"
        await answer(bridge, req.id, {"approved": "no"}, reason="the changelog is missing")
        await wait_for(lambda: _is(bridge, req.id, "delivered"))
        assert mastra.resumes(run_id) == [
            {"step": "approve", "resumeData": {"approved": False, "reason": "the changelog is missing"}}]
        notes = await request_for(bridge, run_id, tool="notes")
        assert [(q.id, q.kind, q.prompt, q.help_text) for q in notes.questions] == [
            ("notes", "text", "Release notes?", "Release notes")]
        await answer(bridge, notes.id, {"notes": "hold until Monday"})
        await wait_for(lambda: _is(bridge, notes.id, "delivered"))
        run = await mastra.run("deploy", run_id)
        assert run["status"] == "success"
        assert run["result"] == {"approved": False, "reason": "the changelog is missing", "notes": "hold until Monday"}


async def test_run_finished_elsewhere_before_the_answer_fails_with_the_reason(
    tmp_path: Path, mastra: MastraEngine
) -> None:
    run_id = await mastra.start("deploy", {"version": "v3"})
    source = mastra_source(mastra, ["deploy"], poll_every="1h")  # one poll: the bridge does not notice
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        req = await request_for(bridge, run_id)
        await mastra.resume("deploy", run_id, "approve", {"approved": True})
        await mastra.resume("deploy", run_id, "notes", {"notes": "done in the playground"})
        await answer(bridge, req.id, {"approved": "no"})
        error = await failed_with(bridge, req.id)
        assert "no longer waits for this answer" in error and "the run is success" in error
        assert mastra.resumes(run_id) == []  # nothing was sent to a run that had moved on
        assert (await mastra.run("deploy", run_id))["result"]["notes"] == "done in the playground"


async def test_run_at_another_step_refuses_and_the_request_fails(tmp_path: Path, mastra: MastraEngine) -> None:
    """The run moves on between the bridge's check and its resume call: Mastra's own refusal
    ("step approve was not suspended") reaches the request."""
    run_id = await mastra.start("deploy", {"version": "v4"})
    moved = False

    async def race(method: str, path: str, query: str) -> None:
        nonlocal moved
        if method == "POST" and path.endswith("/resume-async") and not moved:
            moved = True
            await mastra.resume("deploy", run_id, "approve", {"approved": False})
        return None

    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, ["deploy"], poll_every="1h"))) as bridge:
        req = await request_for(bridge, run_id)
        mastra.forward.before = race
        await answer(bridge, req.id, {"approved": "yes"})
        error = await failed_with(bridge, req.id)
        assert 'This workflow step \\"approve\\" was not suspended' in error or \
            'This workflow step "approve" was not suspended' in error
        assert "answered elsewhere with another answer" in error and "waiting at notes" in error
        run = await mastra.run("deploy", run_id)
        assert run["steps"]["approve"]["resumePayload"] == {"approved": False}


async def test_answers_that_do_not_fit_the_resume_schema_fail_with_mastras_reason(
    tmp_path: Path, mastra: MastraEngine
) -> None:
    too_few, not_a_number, fits = [await mastra.start("rollout") for _ in range(3)]
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, ["rollout"]))) as bridge:
        req = await request_for(bridge, too_few)
        assert [(q.id, q.kind, q.prompt, q.options, q.required) for q in req.questions] == [
            ("region", "choice", "Where to deploy", ["eu-west", "us-east"], True),
            ("replicas", "text", "How many replicas", [], True),
            ("notify", "confirm", "Tell the team?", [], False),
        ]
        assert req.questions[1].help_text == "A whole number, at least 1 and at most 20"
        assert req.description == "Configure the rollout" and "details" not in req.context  # __hint hidden
        await answer(bridge, req.id, {"region": "eu-west", "replicas": "0"})
        error = await failed_with(bridge, req.id)
        assert error.startswith("delivery failed: Mastra refused the answer: Invalid resume data")
        assert "replicas" in error
        assert await mastra.status("rollout", too_few) == "suspended"  # the run still waits

        bad = await request_for(bridge, not_a_number)
        await answer(bridge, bad.id, {"region": "eu-west", "replicas": "three"})
        assert "replicas must be a whole number; got 'three'" in await failed_with(bridge, bad.id)
        assert mastra.resumes(not_a_number) == []

        good = await request_for(bridge, fits)
        await answer(bridge, good.id, {"region": "us-east", "replicas": "3", "notify": "yes"})
        await wait_for(lambda: _is(bridge, good.id, "delivered"))
        assert (await mastra.run("rollout", fits))["result"] == {"region": "us-east", "replicas": 3, "notify": True}


async def test_without_the_schema_a_mismatched_answer_is_refused_not_lost(tmp_path: Path, mastra: MastraEngine) -> None:
    """A Mastra that does not publish the schema (here: the workflow route answers 404): the
    bridge asks from the payload and sends {answer: …}; Mastra refuses it, and the request
    fails with Mastra's reason instead of showing `delivered` while the run still waits."""
    run_id = await mastra.start("deploy", {"version": "v5"})

    async def no_info(method: str, path: str, query: str) -> tuple[int, Any] | None:
        return (404, {"error": "Workflow not found"}) if method == "GET" and path == "/api/workflows/deploy" else None

    mastra.forward.before = no_info
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, ["deploy"]))) as bridge:
        req = await request_for(bridge, run_id)
        assert [(q.id, q.kind) for q in req.questions] == [("answer", "text")]
        await answer(bridge, req.id, {"answer": "yes"})
        error = await failed_with(bridge, req.id)
        assert "Mastra refused the answer: Invalid resume data" in error and "approved" in error
        assert mastra.resumes(run_id) == [{"step": "approve", "resumeData": {"answer": "yes"}}]
        assert await mastra.status("deploy", run_id) == "suspended"


async def test_runs_finishing_while_a_poll_pages_withdraw_only_their_own_requests(
    tmp_path: Path, mastra: MastraEngine
) -> None:
    runs = [await mastra.start("freeform") for _ in range(30)]
    newest_first = runs[::-1]
    finished = newest_first[:10]
    fired = 0

    async def finish_ten_mid_poll(method: str, path: str, query: str) -> None:
        nonlocal fired
        if fired == 0 and path.endswith("/freeform/runs") and "page=5&" in query:
            fired = 1
            for run_id in finished:  # the 5 already listed and the 5 on the next pages
                await mastra.resume("freeform", run_id, "pick", {"answer": "eu"})
        elif fired and path.endswith("/freeform/runs") and "page=0&" in query:
            fired += 1  # polls started after the one that saw the runs finish
        return None

    source = mastra_source(mastra, ["freeform"], page_size=1)
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        await wait_for(lambda: _count_open(bridge, 30), timeout=20)
        mastra.forward.before = finish_ten_mid_poll
        await wait_for(lambda: fired >= 3, timeout=20)
        still_open = {r.run_id for r in await open_requests(bridge, "mastra")}
        assert still_open == set(runs) - set(finished)
        everything = await bridge.store.list_requests(source="mastra", limit=100)
        assert len(everything) == 30 and {r.run_id for r in everything if r.state == "cancelled"} == set(finished)


async def _count_open(bridge: Daemon, n: int) -> bool:
    return len(await open_requests(bridge, "mastra")) == n


async def test_parallel_suspensions_are_two_requests_answered_at_once(tmp_path: Path, mastra: MastraEngine) -> None:
    run_id = await mastra.start("parallel")
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, ["parallel"]))) as bridge:
        security = await request_for(bridge, run_id, tool="security")
        legal = await request_for(bridge, run_id, tool="legal")
        assert security.questions[0].prompt == "Did the security review pass?"
        await answer(bridge, security.id, {"ok": "yes"})
        await answer(bridge, legal.id, {"ok": "no"})
        await wait_for(lambda: _is(bridge, security.id, "delivered"), timeout=15)
        await wait_for(lambda: _is(bridge, legal.id, "delivered"), timeout=15)
        run = await mastra.run("parallel", run_id)
        assert run["status"] == "success"
        assert run["result"] == {"security": {"ok": True}, "legal": {"ok": False}}


async def test_nested_workflow_step_is_asked_and_resumed_by_its_path(tmp_path: Path, mastra: MastraEngine) -> None:
    run_id = await mastra.start("nested")
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, ["nested"]))) as bridge:
        req = await request_for(bridge, run_id)
        assert (req.title, req.tool) == ("nested: contract.sign", "contract.sign")
        assert [(q.id, q.kind, q.prompt, q.help_text) for q in req.questions] == [
            ("signer", "text", "Who signs?", "Who signs the contract")]
        assert "__workflow_meta" not in str(req.context) and "details" not in req.context
        await answer(bridge, req.id, {"signer": "Ada"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"))
        assert mastra.resumes(run_id) == [{"step": ["contract", "sign"], "resumeData": {"signer": "Ada"}}]
        assert (await mastra.run("nested", run_id))["result"] == {"signer": "Ada"}


async def test_payload_options_without_a_schema_resume_with_the_option_value(
    tmp_path: Path, mastra: MastraEngine
) -> None:
    run_id = await mastra.start("freeform")
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, ["freeform"]))) as bridge:
        req = await request_for(bridge, run_id)
        assert (req.questions[0].kind, req.questions[0].options) == ("choice", ["Europe", "us"])
        assert req.context["details"] == {"ticket": "OPS-7"}
        await answer(bridge, req.id, {"answer": "Europe"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"))
        assert (await mastra.run("freeform", run_id))["result"] == {"picked": {"answer": "eu"}}


async def test_any_resume_schema_with_listed_options_is_a_choice_with_other(
    tmp_path: Path, mastra: MastraEngine
) -> None:
    """`resumeSchema: z.any()` (the whole resumeData, then one property): the payload's
    `choices` / `allowedValues` are offered as buttons with a typed "other", not JSON to edit;
    the step gets the chosen option's value, or the typed text."""
    run_id = await mastra.start("triage")
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, ["triage"]))) as bridge:
        first = await request_for(bridge, run_id, "priority")
        choice, other = first.questions
        assert (choice.kind, choice.prompt, choice.options) == ("choice", "Which priority?", ["low", "high", OTHER])
        assert (other.kind, other.required) == ("text", False)
        await answer(bridge, first.id, {"answer": "high"})
        await wait_for(lambda: _is(bridge, first.id, "delivered"))
        second = await request_for(bridge, run_id, "owner")
        assert [q.kind for q in second.questions] == ["choice", "text"]
        assert second.questions[0].options == ["Ops team", "dev", OTHER]
        await answer(bridge, second.id, {second.questions[0].id: OTHER, second.questions[1].id: "security"})
        await wait_for(lambda: _is(bridge, second.id, "delivered"))
        assert (await mastra.run("triage", run_id))["result"] == {"priority": "high", "owner": "security"}


async def test_other_chosen_without_typed_text_fails_clearly(tmp_path: Path, mastra: MastraEngine) -> None:
    run_id = await mastra.start("triage")
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, ["triage"]))) as bridge:
        first = await request_for(bridge, run_id, "priority")
        await answer(bridge, first.id, {"answer": OTHER})
        assert "no other answer was typed" in await failed_with(bridge, first.id)
        assert (await mastra.run("triage", run_id))["status"] == "suspended"


async def test_lost_reply_is_checked_and_not_sent_to_the_next_round(tmp_path: Path, mastra: MastraEngine) -> None:
    """The loop asks again at the same step; a resume whose reply was lost must not be sent
    again (it would answer round 2)."""
    run_id = await mastra.start("loop")
    source = mastra_source(mastra, ["loop"], timeout="300ms")
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        req = await request_for(bridge, run_id)
        mastra.forward.late_replies, mastra.forward.late_by = 1, 0.8
        await answer(bridge, req.id, {"answer": "first"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"))
        round_two = await request_for(bridge, run_id, tool="round")
        assert round_two.questions[0].prompt == "Round 2?" and round_two.id != req.id
        run = await mastra.run("loop", run_id)
        assert run["steps"]["round"]["metadata"]["iterationCount"] == 2
        assert len(mastra.resumes(run_id)) == 1
        await answer(bridge, round_two.id, {"answer": "done"})
        await wait_for(lambda: _is(bridge, round_two.id, "delivered"))
        assert await mastra.status("loop", run_id) == "success"


async def test_long_running_resume_is_delivered_once_mastra_took_it(tmp_path: Path, mastra: MastraEngine) -> None:
    """`resume-async` waits for the run to pause again; the bridge does not: once the run is
    working on the answer, it is delivered (and never sent twice)."""
    run_id = await mastra.start("deploy", {"version": "v6", "workMs": 1500})
    source = mastra_source(mastra, ["deploy"], timeout="400ms")
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        req = await request_for(bridge, run_id)
        await answer(bridge, req.id, {"approved": "yes"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"))
        await request_for(bridge, run_id, tool="notes")
        assert mastra.resumes(run_id) == [{"step": "approve", "resumeData": {"approved": True}}]


async def test_bridge_restart_mid_resume_delivers_once(tmp_path: Path, mastra: MastraEngine) -> None:
    run_id = await mastra.start("deploy", {"version": "v7", "workMs": 1500})
    config = engine_config(mastra_source(mastra, ["deploy"], timeout="5s"))
    async with running_bridge(tmp_path, config) as bridge:
        req = await request_for(bridge, run_id)
        await answer(bridge, req.id, {"approved": "yes"})
        await wait_for(lambda: mastra.resumes(run_id))
        assert await state_of(bridge, req.id) == "answered"  # stopped while Mastra works on it
    async with running_bridge(tmp_path, config) as bridge:
        await wait_for(lambda: _is(bridge, req.id, "delivered"), timeout=15)
        await request_for(bridge, run_id, tool="notes")
    assert mastra.resumes(run_id) == [{"step": "approve", "resumeData": {"approved": True}}]
    assert (await mastra.run("deploy", run_id))["steps"]["approve"]["resumePayload"] == {"approved": True}


async def test_engine_down_then_erroring_is_retried(tmp_path: Path, mastra: MastraEngine) -> None:
    run_id = await mastra.start("deploy", {"version": "v8"})
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, ["deploy"]))) as bridge:
        req = await request_for(bridge, run_id)
        await mastra.server.stop()
        await answer(bridge, req.id, {"approved": "yes"})

        async def failing() -> bool:
            view = await get_request(bridge, req.id)
            return bool(view["outbox"]) and view["outbox"][0]["attempts"] >= 1

        await wait_for(failing)
        assert 'hitl_outbox_failing{source="mastra"} 1.0' in await metrics(bridge)
        assert await state_of(bridge, req.id) == "answered"
        await mastra.server.start()
        mastra.server.set_faults("error", remaining=1, only_methods=("POST",))
        await wait_for(lambda: _is(bridge, req.id, "delivered"), timeout=15)
        assert (await mastra.run("deploy", run_id))["steps"]["approve"]["resumePayload"] == {"approved": True}


async def test_garbage_replies_while_delivering_are_checked_not_trusted(tmp_path: Path, mastra: MastraEngine) -> None:
    """Unreadable runs and a resume "reply" that is not Mastra's (the proxy answers HTML in
    its place): retried, and delivered only once the run really has the answer."""
    run_id = await mastra.start("deploy", {"version": "v12"})
    async with running_bridge(tmp_path, engine_config(mastra_source(mastra, ["deploy"], poll_every="1h"))) as bridge:
        req = await request_for(bridge, run_id)
        posts = 0

        async def html_for_the_first_resume(method: str, path: str, query: str) -> tuple[int, Any] | None:
            nonlocal posts
            if method == "POST":
                posts += 1
                return (200, b"<html>gateway</html>") if posts == 1 else None
            return None

        mastra.forward.before = html_for_the_first_resume
        mastra.server.set_faults("garbage", remaining=2, only_methods=("GET",))
        await answer(bridge, req.id, {"approved": "yes"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"), timeout=15)
        errors = [e.data["error"] for e in await bridge.store.list_events(req.id) if e.kind == "delivery_retry"]
        assert any("cannot read the run from Mastra" in e for e in errors)
        assert any("reply to the resume call was not JSON" in e for e in errors)
        run = await mastra.run("deploy", run_id)
        assert run["steps"]["approve"]["resumePayload"] == {"approved": True}
        assert len(mastra.resumes(run_id)) == 2  # the first never reached Mastra (the proxy answered it)


async def test_garbage_and_slow_listings_keep_requests_open(tmp_path: Path, mastra: MastraEngine) -> None:
    run_id = await mastra.start("deploy", {"version": "v9"})
    source = mastra_source(mastra, ["deploy", "missing"], timeout="300ms")
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        req = await request_for(bridge, run_id)
        src = bridge.sources[0]
        assert isinstance(src, MastraSource)
        await wait_for(lambda: src.polls >= 2)
        assert "HTTP 404" in src.errors["wf:missing"] and set(src.errors) == {"wf:missing"}
        async with httpx.AsyncClient(base_url=bridge.base_url) as http:  # shown to operators
            shown = (await http.get("/v1/sources")).json()["sources"]
        assert shown[0]["problems"][0]["where"] == "wf:missing"
        for mode, extra in (("garbage", {}), ("slow", {"delay": 0.5})):
            mastra.server.set_faults(mode, only_methods=("GET",), **extra)
            polls = src.polls
            await wait_for(lambda p=polls: src.polls >= p + 2)
            assert await state_of(bridge, req.id) == "posted"
        mastra.server.set_faults("ok")
        await answer(bridge, req.id, {"approved": "yes"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"))


async def test_run_resumed_elsewhere_while_the_bridge_was_down_is_withdrawn(
    tmp_path: Path, mastra: MastraEngine
) -> None:
    kept, moved = await mastra.start("deploy", {"version": "v10"}), await mastra.start("deploy", {"version": "v11"})
    config = engine_config(mastra_source(mastra, ["deploy"]))
    async with running_bridge(tmp_path, config) as bridge:
        first = await request_for(bridge, moved)
        await request_for(bridge, kept)
    await mastra.resume("deploy", moved, "approve", {"approved": True})
    async with running_bridge(tmp_path, config) as bridge:
        await wait_for(lambda: _is(bridge, first.id, "cancelled"))
        events = [e.kind for e in await bridge.store.list_events(first.id)]
        assert "withdrawn" in events
        assert {r.run_id for r in await open_requests(bridge, "mastra")} == {kept, moved}  # notes of `moved` is new
