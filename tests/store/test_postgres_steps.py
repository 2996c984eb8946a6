"""Timer steps among replicas on PostgreSQL. A replica killed (SIGKILL) between claiming an
escalation level and posting it leaves the step leased: when the lease ends another replica
posts it, once, even with two replicas trying at the same moment; a replica whose post is
slow renews its lease, so a live replica's step is never taken over and posted twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.models import Request
from bridge.store.postgres import PostgresStore
from tests.fakes.slack_api import FakeSlack
from tests.harness import ManualClock, running_bridge, wait_for
from tests.slack.conftest import SIGNING_SECRET
from tests.store.process import start_daemon

pytestmark = pytest.mark.postgres

BODY = {"title": "Deploy api?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}]}


def config(url: str, fake: FakeSlack) -> dict[str, Any]:
    return {
        "store": {"url": url},
        "slack": {"bot_token": fake.bot_token, "signing_secret": SIGNING_SECRET, "api_url": fake.api_url,
                  "post_interval_s": 0, "backoff_s": 0.01},
        "routes": [{"name": "deploys", "notify": ["slack:#deploys"],
                    "escalate": [{"after": "2s", "notify": ["slack:#incidents"]}]}],
    }


def copies(fake: FakeSlack, channel: str, request_id: str) -> list[dict[str, Any]]:
    return [m for m in fake.channel_messages(channel)
            if (m.get("metadata") or {}).get("event_payload", {}).get("request_id") == request_id]


def escalation_posts_started(fake: FakeSlack) -> int:
    return sum(1 for c in fake.calls if c.method == "chat.postMessage"
               and c.args.get("channel") in ("#incidents", "C0INCIDENTS"))


async def stored(url: str, request_id: str) -> Request:
    store = PostgresStore(url)
    await store.open()
    try:
        request = await store.get_request(request_id)
    finally:
        await store.close()
    assert request is not None
    return request


async def test_a_step_whose_replica_was_killed_is_posted_once_by_another(
        tmp_path: Path, postgres_url: str) -> None:
    async with FakeSlack() as fake:
        settings = config(postgres_url, fake)
        config_file = tmp_path / "a.yaml"  # JSON is YAML
        config_file.write_text(json.dumps({**settings, "http": {"listen": "127.0.0.1:0"},
                                           "sources": [{"type": "webhook"}]}))
        proc, base = await start_daemon(config_file, tmp_path)
        try:
            async with httpx.AsyncClient(base_url=base) as client:
                created = await client.post("/v1/requests", json=BODY)
                assert created.status_code == 201, created.text
                rid = created.json()["id"]
            await wait_for(lambda: copies(fake, "C0DEPLOYS", rid), timeout=10)
            # the escalation post is rate limited for an hour: replica A waits, and dies waiting
            fake.inject("chat.postMessage", 429, retry_after=3600)
            await wait_for(lambda: escalation_posts_started(fake) == 1, timeout=30)
            os.kill(proc.pid, signal.SIGKILL)
            await asyncio.wait_for(proc.wait(), timeout=30)
        finally:
            if proc.returncode is None:
                proc.kill()
        request = await stored(postgres_url, rid)
        assert request.escalation_level == 1  # claimed...
        [step] = request.timer_steps  # ...and still owed
        assert step.id == "escalate:1" and step.targets == ["slack:#incidents"]
        assert copies(fake, "C0INCIDENTS", rid) == []

        clock = ManualClock(datetime.now(UTC) + timedelta(seconds=20))  # the lease (60 s) has not ended
        async with running_bridge(tmp_path / "b", settings, clock=clock) as b, \
                running_bridge(tmp_path / "c", settings, clock=clock) as c:
            for replica in (b, c):
                await replica.scheduler.resync()
                await replica.service.drain()
            assert copies(fake, "C0INCIDENTS", rid) == []  # nobody takes a step over before its lease ends
            clock.advance(seconds=60)
            for replica in (b, c):
                await replica.scheduler.resync()
            await asyncio.gather(b.scheduler.run_due(), c.scheduler.run_due())  # both try at once
            for replica in (b, c):
                await replica.service.drain()
            assert len(copies(fake, "C0INCIDENTS", rid)) == 1
            taken = [e for e in await b.store.list_events(rid) if e.kind == "timer_step_taken_over"]
            assert [e.data for e in taken] == [{"step": "escalate:1", "from": step.owner}]
            assert (await stored(postgres_url, rid)).timer_steps == []
            assert [e.kind for e in await b.store.list_events(rid)].count("escalated") == 1


async def test_a_live_replica_renews_its_lease_while_a_post_is_slow(tmp_path: Path, postgres_url: str) -> None:
    async with FakeSlack() as fake:
        settings = config(postgres_url, fake)
        clock = ManualClock(datetime.now(UTC))
        async with running_bridge(tmp_path / "a", settings, clock=clock) as a, \
                running_bridge(tmp_path / "b", settings, clock=clock) as b:
            a.scheduler.actions.renew_every_s = 0.05
            async with httpx.AsyncClient(base_url=a.base_url) as client:
                rid = (await client.post("/v1/requests", json=BODY)).json()["id"]
            await wait_for(lambda: copies(fake, "C0DEPLOYS", rid), timeout=10)
            fake.delays["chat.postMessage"] = 3.0  # the escalation post takes 3 s
            clock.advance(seconds=2)
            assert await a.scheduler.run_due() == 1  # a claims level 1; its post is under way
            await wait_for(lambda: escalation_posts_started(fake) == 1, timeout=10)
            clock.advance(seconds=61)  # past the first lease: only a renewal keeps it a's

            async def renewed() -> bool:
                [step] = (await stored(postgres_url, rid)).timer_steps
                return step.lease_until > clock.now()

            await wait_for(renewed, timeout=2)
            await b.scheduler.resync()
            await b.scheduler.run_due()
            await b.service.drain()
            await a.service.drain()
            assert len(copies(fake, "C0INCIDENTS", rid)) == 1
            assert escalation_posts_started(fake) == 1
            events = [e.kind for e in await a.store.list_events(rid)]
            assert "timer_step_taken_over" not in events
            assert (await stored(postgres_url, rid)).timer_steps == []
