"""Exporting the record: `GET /v1/audit` (its own token scope, paged by chain position) and
`hitl-bridge audit export|verify` on the store (JSON lines and CSV round-trip)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge import cli as hitl
from bridge.audit.export import from_csv
from tests.harness import running_bridge

OPS = "ops-token-0123456789abcdef"
AUDITOR = "audit-token-0123456789abcdef"
TOKENS = {"http": {"api_tokens": {"ops": OPS, "auditor": {"token": AUDITOR, "audit": True}}}}
SECRET = "hunter2-very-secret"


async def run(args: list[str]) -> int:
    """`hitl-bridge ARGS` in this process (in a thread: the CLI runs its own event loop)."""
    return await asyncio.to_thread(hitl.run, args)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def some_answers(client: httpx.AsyncClient, count: int) -> list[str]:
    ids = []
    for i in range(count):
        r = await client.post("/v1/requests", headers=bearer(OPS), json={
            "title": f"Deploy {i}?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"},
                                                  {"id": "pw", "kind": "secret", "prompt": "Password"}]})
        assert r.status_code == 201, r.text
        rid = r.json()["id"]
        r = await client.post(f"/v1/requests/{rid}/answer", headers=bearer(OPS),
                              json={"values": {"ok": "yes", "pw": SECRET}})
        assert r.status_code == 200, r.text
        ids.append(rid)
    return ids


async def test_the_api_export_needs_the_audit_scope_and_pages(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        ids = await some_answers(client, 4)
        assert (await client.get("/v1/audit")).status_code == 401
        refused = await client.get("/v1/audit", headers=bearer(OPS))
        assert refused.status_code == 403 and "audit: true" in refused.json()["detail"]
        events: list[dict[str, Any]] = []
        after = 0
        pages = 0
        while True:
            r = await client.get("/v1/audit", params={"after": after, "limit": 3}, headers=bearer(AUDITOR))
            assert r.status_code == 200, r.text
            body = r.json()
            assert len(body["events"]) <= 3
            events += body["events"]
            pages += 1
            if body["next"] is None:
                break
            after = body["next"]
        assert pages > 2
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert body["head"]["seq"] == len(events) and body["head"]["hash"] == events[-1]["hash"]
        answered = [e for e in events if e["kind"] == "answered"]
        assert [e["request_id"] for e in answered] == ids
        assert {e["actor"] for e in answered} == {"api:ops"}  # as the token was verified, never a claim
        assert SECRET not in json.dumps(events)
        for bad in ({"limit": 0}, {"limit": 100000}, {"after": -1}, {"after": 10**30}, {"since": "yesterday"},
                    {"since": "2026-01-01T00:00:00"}):
            assert (await client.get("/v1/audit", params=bad, headers=bearer(AUDITOR))).status_code == 422, bad
        future = await client.get("/v1/audit", params={"since": "2999-01-01T00:00:00Z"}, headers=bearer(AUDITOR))
        assert future.status_code == 200 and future.json()["events"] == []


async def test_export_round_trips_and_verify_reads_the_store(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    async with running_bridge(tmp_path, TOKENS) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        await some_answers(client, 3)
        r = await client.get("/v1/audit", headers=bearer(AUDITOR))
        served = r.json()["events"]
    config = tmp_path / "admin.yaml"
    config.write_text(f"store: {{url: 'sqlite:///{tmp_path}/bridge.db'}}\n")
    capsys.readouterr()
    assert await run(["-c", str(config), "audit", "export", "--format", "jsonl"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[:len(served)] == served  # the API's export is the store's (later events: the write-backs)
    assert await run(["-c", str(config), "audit", "export", "--format", "csv"]) == 0
    assert from_csv(capsys.readouterr().out) == lines
    assert await run(["-c", str(config), "audit", "export", "--since", "2999-01-01"]) == 0
    assert capsys.readouterr().out == ""
    assert await run(["-c", str(config), "audit", "export", "--since", "last tuesday"]) == 2
    assert "--since" in capsys.readouterr().err

    assert await run(["-c", str(config), "audit", "verify"]) == 0
    out = capsys.readouterr().out
    assert f"record intact: {len(lines)} event(s) checked" in out and lines[-1]["hash"] in out
    with sqlite3.connect(tmp_path / "bridge.db") as db:
        db.execute("UPDATE events SET actor='slack:UEVIL' WHERE id=?", (served[2]["id"],))
    assert await run(["-c", str(config), "audit", "verify", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(p["what"], p["event_id"], p["request_id"]) for p in report["problems"]] == [
        ("edited", served[2]["id"], served[2]["request_id"])]
