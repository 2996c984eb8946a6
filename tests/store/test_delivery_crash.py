"""A daemon killed (SIGKILL) at the moment its callbacks are answered loses no answer and
leaves no request `answered` for good: the outbox entry and the state change commit
together, the next start delivers what was in flight again, and a start heals requests
an older bridge left `answered` with a delivery that had succeeded."""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bridge.http.loopback import serving
from bridge.models import Answer, RequestState, Responder
from bridge.store.sqlite import SQLiteStore
from tests.harness import ManualClock, running_bridge, wait_for
from tests.store.process import start_daemon

REQUESTS = 40
KILL_AT = 20  # the daemon dies right after the 20th callback got its 200


class KillingReceiver:
    """Answers every callback 200; after sending the KILL_AT-th answer, kills the daemon."""

    def __init__(self) -> None:
        self.pid = 0
        self.calls = 0
        self.seen: Counter[str] = Counter()

    async def handle(self, request: Request) -> Response:
        await request.body()
        self.seen[request.headers["x-hitl-request-id"]] += 1
        self.calls += 1
        if self.calls == KILL_AT:
            return Response(status_code=200, background=BackgroundTask(os.kill, self.pid, signal.SIGKILL))
        return Response(status_code=200)


async def answer_all(base: str, callback: str) -> dict[str, bool]:
    """Create and answer REQUESTS requests, 8 at a time; id -> whether the answer was acknowledged."""
    out: dict[str, bool] = {}
    async with httpx.AsyncClient(base_url=base, timeout=10) as client:
        async def one(n: int) -> None:
            created = await client.post("/v1/requests", json={
                "title": f"deploy {n}", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}],
                "callback": {"url": callback, "secret": "s" * 24}})
            rid = created.json()["id"]
            try:
                out[rid] = (await client.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})).status_code == 200
            except httpx.HTTPError:  # killed meanwhile
                out[rid] = False

        for start in range(0, REQUESTS, 8):
            try:
                await asyncio.gather(*(one(n) for n in range(start, start + 8)))
            except httpx.HTTPError:
                break  # the daemon is gone: nothing more was acknowledged
    return out


async def test_kill_9_while_callbacks_are_answered_loses_nothing(tmp_path: Path) -> None:
    receiver = KillingReceiver()
    app = Starlette(routes=[Route("/hook", receiver.handle, methods=["POST"])])
    settings: dict[str, Any] = {"store": {"url": f"sqlite:///{tmp_path}/bridge.db"}}
    config = tmp_path / "bridge.yaml"
    config.write_text(f"store: {{url: 'sqlite:///{tmp_path}/bridge.db'}}\nhttp: {{listen: '127.0.0.1:0'}}\n"
                      "sources: [{type: webhook}]\n")
    async with serving(app, "the callback receiver") as port:
        proc, base = await start_daemon(config, tmp_path)
        receiver.pid = proc.pid
        try:
            acknowledged = await answer_all(base, f"http://127.0.0.1:{port}/hook")
            assert await asyncio.wait_for(proc.wait(), timeout=60) == -signal.SIGKILL
        finally:
            if proc.returncode is None:
                proc.kill()
        assert receiver.calls >= KILL_AT
        # the next start, once the dead daemon's delivery leases (timeout + 30 s) have run out
        clock = ManualClock(datetime.now(UTC) + timedelta(minutes=5))
        async with running_bridge(tmp_path, settings, clock=clock) as daemon:
            async def settled() -> bool:
                states = [r.state for r in await daemon.store.list_requests(limit=1000)]
                return RequestState.answered not in states and RequestState.expired not in states

            await wait_for(settled, timeout=30)
            for rid, acked in acknowledged.items():
                request = await daemon.store.get_request(rid)
                assert request is not None
                if acked:  # an acknowledged answer is never lost, and the engine got it
                    assert request.state is RequestState.delivered, (rid, request.state)
                    assert receiver.seen[rid] >= 1
                if request.state is RequestState.delivered:
                    assert receiver.seen[rid] >= 1


async def test_a_start_heals_requests_left_answered_after_a_successful_delivery(tmp_path: Path) -> None:
    """What the old two-step success left after a crash between the steps: the outbox entry
    done, the request still `answered`. The next start moves it to `delivered`, once."""
    clock = ManualClock()
    async with running_bridge(tmp_path, clock=clock) as daemon, \
            httpx.AsyncClient(base_url=daemon.base_url) as client:
        created = await client.post("/v1/requests", json={
            "title": "t", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}]})
        rid = created.json()["id"]
    # an answer whose write-back succeeded, recorded the old way (entry done, state kept)
    store = SQLiteStore(tmp_path / "bridge.db")
    await store.open()
    answer = Answer(values={"ok": "yes"}, responder=Responder(platform="api", user_id="ana"), via="api",
                    answered_at=clock.now())
    assert await store.transition(rid, {RequestState.posted, RequestState.pending}, RequestState.answered,
                                  answer=answer, enqueue="answered", now=clock.now()) is not None
    [item] = await store.list_outbox(request_id=rid)
    await store.outbox_done(item.id)
    await store.close()
    async with running_bridge(tmp_path, clock=clock) as daemon:
        async def delivered() -> bool:
            request = await daemon.store.get_request(rid)
            return request is not None and request.state is RequestState.delivered

        await wait_for(delivered, timeout=10)
        healed = [e for e in await daemon.store.list_events(rid) if e.kind == "delivered"]
        assert [e.data for e in healed] == [{"outcome": "answered", "healed": True}]
        assert await daemon.store.heal_deliveries(clock.now()) == []  # nothing left to heal
