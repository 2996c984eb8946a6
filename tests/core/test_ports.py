"""The Source port: a source gets the core (its sink) when its routes are built, so its
routes answer before `run()` and never reach into the app's state; and it can wait on the
sink for a request's outcome (`RequestSink.wait`) rather than long-polling the HTTP API."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette

from bridge.clock import SystemClock
from bridge.daemon import Daemon
from bridge.models import RequestState
from bridge.ports import Source
from bridge.registry import build_sources
from tests.engines.fake_teal import FakeTeal, tool_call
from tests.harness import running_bridge, wait_for

TOKEN = "ports-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ASK = {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]}


def config(*sources: dict[str, Any]) -> dict[str, Any]:
    return {"http": {"api_tokens": {"agent": TOKEN}}, "sources": [{"type": "webhook"}, *sources]}


def fresh_source(daemon: Daemon, kind: str) -> Source:
    """A new, never-run instance of the daemon's `kind` source (same settings, same store)."""
    return next(s for s in build_sources(daemon.settings, daemon.store, SystemClock()) if s.name == kind)


def bare_app(source: Source, daemon: Daemon) -> httpx.AsyncClient:
    """The source's routes alone, in an app with no state (no `app.state.bridge`)."""
    app = Starlette(routes=list(source.http_routes(daemon.service)))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost")


async def test_the_webhook_intake_feeds_the_sink_it_was_given(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, config()) as daemon:
        async with bare_app(fresh_source(daemon, "webhook"), daemon) as http:
            refused = await http.post("/v1/requests", json=ASK)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            wrong = await http.post("/v1/requests", json=ASK, headers={"Authorization": "Bearer nope-0123456789"})
            assert wrong.status_code == 401
            bad = await http.post("/v1/requests", content=b"[1, 2]", headers=AUTH)
            assert bad.status_code == 422 and "JSON object" in bad.text  # (the app words errors as JSON)
            created = await http.post("/v1/requests", json={**ASK, "external_id": "run-1"}, headers=AUTH)
            assert created.status_code == 201, created.text
            again = await http.post("/v1/requests", json={**ASK, "external_id": "run-1"}, headers=AUTH)
            assert again.status_code == 200 and again.json()["id"] == created.json()["id"]
        stored = await daemon.store.get_request(created.json()["id"])
        assert stored is not None and stored.created_by == "api:agent" and stored.source == "webhook"


async def test_teal_pauses_are_taken_before_the_source_runs(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, config({"type": "teal", "base_url": "http://127.0.0.1:1"})) as daemon:
        teal = FakeTeal()
        reply = teal.start_task("Bearer alice", plan=[[tool_call("Deploy", "ship", {"env": "prod"})]])
        pause = {"agent": teal.agent, "version": teal.version, "reply": reply}
        async with bare_app(fresh_source(daemon, "teal"), daemon) as http:  # run() never called
            assert (await http.post("/v1/sources/teal/pauses", json=pause)).status_code == 401
            taken = await http.post("/v1/sources/teal/pauses", json=pause, headers=AUTH)
            assert taken.status_code == 201, taken.text
            withdrawn = await http.post("/v1/sources/teal/pauses/withdraw", headers=AUTH,
                                        json={"task_id": reply["task_id"], "request_id": reply["request_id"]})
            assert withdrawn.status_code == 200 and withdrawn.json()["withdrawn"] == [taken.json()["id"]]
        stored = await daemon.store.get_request(taken.json()["id"])
        assert stored is not None and stored.state is RequestState.cancelled


async def test_a_source_waits_on_the_sink_for_the_outcome(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, config()) as daemon, \
            httpx.AsyncClient(base_url=daemon.base_url, headers=AUTH) as http:
        asked = (await http.post("/v1/requests", json=ASK)).json()["id"]
        other = (await http.post("/v1/requests", json=ASK)).json()["id"]
        sink = daemon.service
        waiting = asyncio.create_task(sink.wait(asked, 30))
        await wait_for(lambda: asked in daemon.service.changes.waited_ids())  # parked on the change feed
        assert not waiting.done()
        answered = await http.post(f"/v1/requests/{asked}/answer", json={"values": {"ok": True}})
        assert answered.status_code == 200, answered.text
        outcome = await waiting
        assert outcome is not None and not outcome.is_open  # answered (or delivered by now)
        assert outcome.answer is not None and outcome.answer.values == {"ok": "yes"}
        still = await sink.wait(other, 0.01)  # nobody answers: as it is at the end of the wait
        assert still is not None and still.is_open
        assert await sink.wait("no-such-request", 0.01) is None
        done = await sink.wait(asked, 30)  # closed already: at once
        assert done is not None and done.answer is not None and done.answer.values == {"ok": "yes"}

