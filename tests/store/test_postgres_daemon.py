"""The real daemon on PostgreSQL: intake → answer → callback, replicas sharing one database,
and a restart that finds its pending deliveries. Real uvicorn, real asyncpg, real HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import callback_receiver, running_bridge, wait_for

pytestmark = pytest.mark.postgres

SECRET_KEY = "a shared passphrase for every replica"


def config(url: str) -> dict[str, Any]:
    return {"store": {"url": url}, "secrets": {"key": SECRET_KEY},
            "delivery": {"first_retry": "20ms", "max_backoff": "50ms"}}


def new_request(callback_url: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": "Deploy api to production?",
        "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}],
        "callback": {"url": callback_url, "secret": "s" * 32},
        **extra,
    }


async def reaches(client: httpx.AsyncClient, request_id: str, state: str) -> bool:
    response = await client.get(f"/v1/requests/{request_id}")
    return bool(response.json()["state"] == state)


async def test_request_answer_callback_on_postgres(tmp_path: Path, postgres_url: str) -> None:
    async with callback_receiver() as receiver, running_bridge(tmp_path, config(postgres_url)) as bridge:
        assert type(bridge.store).__name__ == "PostgresStore"
        async with httpx.AsyncClient(base_url=bridge.base_url) as client:
            r = await client.post("/v1/requests", json=new_request(receiver.url, external_id="run-1:step-4"))
            assert r.status_code == 201, r.text
            rid = r.json()["id"]
            again = await client.post("/v1/requests", json=new_request(receiver.url, external_id="run-1:step-4"))
            assert again.status_code == 200 and again.json()["id"] == rid
            r = await client.post(f"/v1/requests/{rid}/answer", json={"value": "yes", "responder": "alice"})
            assert r.status_code == 200, r.text
            late = await client.post(f"/v1/requests/{rid}/answer", json={"value": "no", "responder": "bob"})
            assert late.status_code == 409 and "already answered by alice" in late.json()["detail"]
            await wait_for(lambda: receiver.received)
            payload = json.loads(receiver.received[0].body)
            assert (payload["request_id"], payload["external_id"]) == (rid, "run-1:step-4")
            assert payload["answer"]["values"] == {"ok": "yes"}
            await wait_for(lambda: reaches(client, rid, "delivered"))
            events = (await client.get(f"/v1/requests/{rid}/events")).json()["events"]
            assert [e["kind"] for e in events][:1] == ["created"]
            assert len(receiver.received) == 1


async def test_hostile_http_input_on_postgres(tmp_path: Path, postgres_url: str) -> None:
    async with running_bridge(tmp_path, config(postgres_url)) as bridge:
        async with httpx.AsyncClient(base_url=bridge.base_url) as client:
            # "\u0000" is valid JSON but PostgreSQL text cannot hold it: still stored, still exact
            body = {"title": "t\u0000", "external_id": "job\u0000", "context": {"k": "v\u0000"},
                    "questions": [{"id": "ok", "kind": "confirm", "prompt": "p\u0000"}]}
            r = await client.post("/v1/requests", json=body)
            assert r.status_code == 201, r.text
            rid = r.json()["id"]
            assert (await client.post("/v1/requests", json=body)).json()["id"] == rid
            other = await client.post("/v1/requests", json={**body, "external_id": "job"})
            assert other.status_code == 201 and other.json()["id"] != rid
            shown = (await client.get(f"/v1/requests/{rid}")).json()
            assert shown["title"] == "t\u0000" and shown["external_id"] == "job\u0000"
            assert (await client.get("/v1/requests/r_%00nope")).status_code == 404
            assert (await client.post("/v1/requests/r_%00nope/answer", json={"value": "yes"})).status_code == 404
            paged = await client.get("/v1/requests", params={"offset": str(10**30)})
            assert paged.status_code == 200 and paged.json()["requests"] == []
            assert (await client.get("/healthz")).status_code == 200  # and the daemon keeps serving
            listed = (await client.get("/v1/requests")).json()["requests"]
            assert {r["id"] for r in listed} == {rid, other.json()["id"]}


async def test_two_replicas_share_requests_and_answer_once(tmp_path: Path, postgres_url: str) -> None:
    async with callback_receiver() as receiver, \
            running_bridge(tmp_path / "a", config(postgres_url)) as replica_a, \
            running_bridge(tmp_path / "b", config(postgres_url)) as replica_b:
        async with httpx.AsyncClient(base_url=replica_a.base_url) as a, \
                httpx.AsyncClient(base_url=replica_b.base_url) as b:
            body = new_request(receiver.url, questions=[
                {"id": "ok", "kind": "confirm", "prompt": "Deploy?"},
                {"id": "token", "kind": "secret", "prompt": "Deploy token"},
            ])
            r = await a.post("/v1/requests", json=body)
            assert r.status_code == 201, r.text
            rid = r.json()["id"]
            assert (await b.get(f"/v1/requests/{rid}")).status_code == 200  # B sees what A stored
            answered = await b.post(f"/v1/requests/{rid}/answer",
                                    json={"values": {"ok": "yes", "token": "tok-123"}, "responder": "carol"})
            assert answered.status_code == 200, answered.text
            late = await a.post(f"/v1/requests/{rid}/answer",
                                json={"values": {"ok": "no", "token": "x"}, "responder": "dave"})
            assert late.status_code == 409 and "already answered by carol" in late.json()["detail"]
            await wait_for(lambda: reaches(a, rid, "delivered"))
            # delivered and its outbox entry done: neither replica can take it again
            assert (await b.get(f"/v1/requests/{rid}")).json()["outbox"] == []
            assert len(receiver.received) == 1
            values = json.loads(receiver.received[0].body)["answer"]["values"]
            assert values == {"ok": "yes", "token": "tok-123"}  # whichever replica delivered could decrypt


async def test_restart_delivers_what_the_previous_daemon_could_not(tmp_path: Path, postgres_url: str) -> None:
    async with callback_receiver() as receiver:
        receiver.down = True
        # retries ~1 s apart: once the first failure is recorded nothing is in flight when we stop
        slow_retry = {**config(postgres_url), "delivery": {"first_retry": "1s", "max_backoff": "1s"}}
        async with running_bridge(tmp_path, slow_retry) as first:
            async with httpx.AsyncClient(base_url=first.base_url) as client:
                rid = (await client.post("/v1/requests", json=new_request(receiver.url))).json()["id"]
                r = await client.post(f"/v1/requests/{rid}/answer", json={"value": "no", "responder": "erin"})
                assert r.status_code == 200, r.text

                async def failed_once() -> bool:
                    outbox = (await client.get(f"/v1/requests/{rid}")).json()["outbox"]
                    return bool(outbox and outbox[0]["attempts"] == 1 and "503" in (outbox[0]["last_error"] or ""))

                await wait_for(failed_once)
        assert receiver.received == []
        receiver.down = False
        async with running_bridge(tmp_path, config(postgres_url)) as second:
            await wait_for(lambda: receiver.received)
            async with httpx.AsyncClient(base_url=second.base_url) as client:
                await wait_for(lambda: reaches(client, rid, "delivered"))
        payload = json.loads(receiver.received[0].body)
        assert payload["request_id"] == rid and payload["answer"]["values"] == {"ok": "no"}
