"""The HTTP surface through a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import running_bridge

CONFIRM = {"title": "Deploy api to prod?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]}

EVERY_KIND: list[dict[str, Any]] = [
    {"id": "ok", "kind": "confirm", "prompt": "Deploy?"},
    {"id": "env", "kind": "choice", "prompt": "Where?", "options": ["staging", "prod"]},
    {"id": "checks", "kind": "multi_choice", "prompt": "Which checks?", "options": ["lint", "tests", "smoke"]},
    {"id": "why", "kind": "text", "prompt": "Why?"},
    {"id": "pw", "kind": "secret", "prompt": "Password?"},
    {"id": "db", "kind": "form", "prompt": "DB", "fields": [{"name": "host"}, {"name": "port", "required": False}]},
    {"id": "args", "kind": "edit", "prompt": "Edit the call", "default": {"replicas": 2}},
]


async def test_native_request_with_every_kind_round_trip(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        r = await client.post("/v1/requests", json={"title": "All kinds", "questions": EVERY_KIND,
                                                   "context": {"tool": {"name": "deploy", "args": [1, 2]}}})
        assert r.status_code == 201, r.text
        rid = r.json()["id"]
        waiter = asyncio.create_task(client.get(f"/v1/requests/{rid}", params={"wait": 30}, timeout=40))
        await asyncio.sleep(0)  # let the long-poll start before answering
        values = {"ok": "yes", "env": "prod", "checks": ["tests", "lint"], "why": "release", "pw": "s3cr3t-value",
                  "db": {"host": "db1"}, "args": {"replicas": 3}}
        r = await client.post(f"/v1/requests/{rid}/answer", json={"values": values, "responder": "ana"})
        assert r.status_code == 200, r.text
        done = (await waiter).json()
        assert done["state"] in ("answered", "delivered")
        assert done["answer"]["values"] == {**values, "checks": ["lint", "tests"], "pw": "[secret]"}
        assert "s3cr3t-value" not in (await client.get(f"/v1/requests/{rid}/events")).text
        assert "s3cr3t-value" not in (await client.get("/v1/requests")).text


async def test_idempotent_external_id_and_second_answer_409(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        body = {**CONFIRM, "external_id": "run-7"}
        first = await client.post("/v1/requests", json=body)
        again = await client.post("/v1/requests", json=body)
        assert (first.status_code, again.status_code) == (201, 200)
        assert first.json()["id"] == again.json()["id"]
        rid = first.json()["id"]
        answers = await asyncio.gather(
            *(client.post(f"/v1/requests/{rid}/answer", json={"value": "yes", "responder": f"p{i}"})
              for i in range(8)))
        codes = sorted(a.status_code for a in answers)
        assert codes == [200] + [409] * 7
        assert all("already answered by p" in a.json()["detail"] for a in answers if a.status_code == 409)


async def test_structured_format_is_accepted_as_is(tmp_path: Path) -> None:
    body = {"request_id": "hitl-1", "node_id": "plan", "objective": "Ship the release",
            "current_state": "tests green", "instructions": "answer all", "examples": ["e"], "missing_info": ["m"],
            "questions": [
                {"id": "env", "question": "Which environment?", "input_type": "selection",
                 "options": ["staging", "prod"]},
                {"id": "go", "question": "Go?", "input_type": "approval"},
                {"id": "note", "question": "Anything else?", "input_type": "free_text", "required": False},
                {"id": "owner", "question": "Owner", "input_type": "multi_field",
                 "fields": {"name": "who owns it", "email": "their email"}},
            ]}
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        r = await client.post("/v1/requests", json=body)
        assert r.status_code == 201, r.text
        data = r.json()
        assert data["format"] == "structured" and data["external_id"] == "hitl-1"
        assert [q["kind"] for q in data["questions"]] == ["choice", "confirm", "text", "form"]
        assert data["title"] == "Ship the release"
        assert (await client.post("/v1/requests", json=body)).status_code == 200


async def test_list_filter_cancel_events_health_openapi_metrics(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        ids = [(await client.post("/v1/requests", json=CONFIRM)).json()["id"] for _ in range(3)]
        r = await client.post(f"/v1/requests/{ids[0]}/cancel", json={"reason": "not needed"})
        assert r.json()["state"] == "cancelled"
        cancelled = (await client.get("/v1/requests", params={"state": "cancelled"})).json()["requests"]
        assert [c["id"] for c in cancelled] == [ids[0]]
        listed = (await client.get("/v1/requests")).json()["requests"]
        assert [x["id"] for x in listed] == ids[::-1]  # newest first
        kinds = [e["kind"] for e in (await client.get(f"/v1/requests/{ids[0]}/events")).json()["events"]]
        assert kinds[0] == "created" and "cancelled" in kinds
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        ready = (await client.get("/readyz")).json()
        assert ready["status"] == "ready" and ready["requests"]["cancelled"] == 1
        paths = (await client.get("/openapi.json")).json()["paths"]
        assert {"/v1/requests", "/v1/requests/{request_id}", "/v1/requests/{request_id}/answer",
                "/v1/requests/{request_id}/cancel", "/v1/requests/{request_id}/events"} <= set(paths)
        metrics = (await client.get("/metrics")).text
        assert 'hitl_requests{state="cancelled"} 1.0' in metrics
        assert (await client.get("/v1/requests/r_nope")).status_code == 404
        assert (await client.post("/v1/requests/r_nope/answer", json={"value": "yes"})).status_code == 404


HOSTILE: list[tuple[str, bytes, int, str]] = [
    ("wrong types", b'{"title": 5, "questions": "nope"}', 422, "title"),
    ("missing questions", b'{"title": "x"}', 422, "questions"),
    ("empty questions", b'{"title": "x", "questions": []}', 422, "questions"),
    ("bad kind", b'{"title": "x", "questions": [{"kind": "telepathy", "prompt": "?"}]}', 422, "questions.0.kind"),
    ("huge string", b'{"title": "' + b"x" * 200_000 + b'", "questions": [{"prompt": "?"}]}', 422, "title"),
    ("deep nesting", b'{"title": "x", "questions": [{"prompt": "?"}], "context": {"a": '
     + b'[' * 5000 + b']' * 5000 + b'}}', 422, ""),
    ("invalid utf-8", b'{"title": "\xff\xfe", "questions": [{"prompt": "?"}]}', 422, ""),
    ("not json", b"title=x", 422, ""),
    ("json array", b"[1, 2]", 422, ""),
    ("bad callback", b'{"title": "x", "questions": [{"prompt": "?"}], "callback": {"url": "gopher://x", '
     b'"secret": "0123456789abcdef"}}', 422, "callback.url"),
    ("unknown key", b'{"title": "x", "questions": [{"prompt": "?"}], "rm_rf": true}', 422, "rm_rf"),
    ("lone surrogate", b'{"title": "\\ud800", "questions": [{"prompt": "?"}]}', 422, "Unicode"),
    ("null byte title", b'{"title": "a\\u0000b", "questions": [{"prompt": "?"}]}', 201, ""),
]


@pytest.mark.parametrize(("name", "body", "status", "named"), HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_hostile_bodies_get_clean_4xx(tmp_path: Path, name: str, body: bytes, status: int, named: str) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        r = await client.post("/v1/requests", content=body, headers={"content-type": "application/json"})
        assert r.status_code in ((status,) if status != 422 else (400, 422)), r.text
        if named:
            assert named in r.json()["detail"]
        assert (await client.post("/v1/requests", json=CONFIRM)).status_code == 201  # still serving


async def test_oversized_body_is_413(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, {"http": {"max_body_bytes": 4096}}) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        big = {**CONFIRM, "description": "x" * 10_000}
        r = await client.post("/v1/requests", json=big)
        assert r.status_code == 413

        async def chunks() -> Any:  # no content-length: counted while streaming
            for _ in range(10):
                yield b"x" * 1000

        r = await client.post("/v1/requests", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        assert (await client.post("/v1/requests", json=CONFIRM)).status_code == 201


async def test_bearer_tokens_guard_v1(tmp_path: Path) -> None:
    token = "t0k3n-" + "x" * 20
    async with running_bridge(tmp_path, {"http": {"api_tokens": [token]}}) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        assert (await client.post("/v1/requests", json=CONFIRM)).status_code == 401
        assert (await client.get("/v1/requests", headers={"Authorization": "Bearer wrong"})).status_code == 401
        ok = await client.post("/v1/requests", json=CONFIRM, headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 201
        assert (await client.get("/healthz")).status_code == 200  # probes stay open
        assert (await client.get("/v1/sources")).status_code == 401  # paths on the disk stay private
        sources = await client.get("/v1/sources", headers={"Authorization": f"Bearer {token}"})
        assert sources.json() == {"sources": [{"name": "webhook", "problem_count": 0, "problems": []}]}


async def test_answer_validation_errors_are_422_naming_the_question(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        rid = (await client.post("/v1/requests", json={"title": "x", "questions": EVERY_KIND[:2]})).json()["id"]
        r = await client.post(f"/v1/requests/{rid}/answer", json={"values": {"ok": "yes", "env": "moon"}})
        assert r.status_code == 422 and "question 'env'" in r.json()["detail"]
        r = await client.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})
        assert r.status_code == 422 and "several questions" in r.json()["detail"]
        r = await client.post(f"/v1/requests/{rid}/answer", content=b'{"values": {"ok": "yes", "env": "\\ud800"}}',
                              headers={"content-type": "application/json"})
        assert r.status_code == 422 and "Unicode" in r.json()["detail"]
        r = await client.post(f"/v1/requests/{rid}/answer", json={"values": {"ok": "yes", "env": "prod"}})
        assert r.status_code == 200


async def test_openapi_documents_both_intake_formats_with_resolvable_refs(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        doc = (await client.get("/openapi.json")).json()
    body = doc["paths"]["/v1/requests"]["post"]["requestBody"]["content"]["application/json"]
    refs = [s["$ref"] for s in body["schema"]["oneOf"]]
    assert refs == ["#/components/schemas/RequestIn", "#/components/schemas/StructuredRequestIn"]
    schemas = doc["components"]["schemas"]
    assert {"RequestIn", "StructuredRequestIn", "Question", "Callback"} <= set(schemas)
    import json as _json

    for ref in __import__("re").findall(r'"#/components/schemas/([^"]+)"', _json.dumps(doc)):
        assert ref in schemas, ref
