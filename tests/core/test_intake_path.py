"""The intake's fast path: POST /v1/requests is served by a plain ASGI route and answered
with JSON rendered in one pass; what a client sees is what the general API shows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bridge.http.views import request_view, request_view_json
from bridge.models import Answer, Request, RequestIn, Responder
from tests.harness import running_bridge

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
BODIES = [
    {"title": "t", "questions": [{"prompt": "p"}]},
    {"title": "Deploy «api»?", "external_id": "run-1", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}],
     "context": {"f": 1.5, "big": 10**30, "text": "é\u2028\"quoted\"", "deep": {"a": [1, {"b": None}]}},
     "labels": {"team": "core"}, "deadline": "2099-05-02T00:00:00Z", "timeout_s": 30,
     "callback": {"url": "https://example.com/hook?a=\"1\"", "secret": "0123456789abcdef0123"}},
]


def stored(body: dict[str, object]) -> Request:
    return Request(**RequestIn.model_validate(body).model_dump(), id="r_x", created_at=NOW, updated_at=NOW)


def test_the_json_view_is_the_view_with_its_keys_in_order() -> None:
    for body in BODIES:
        request = stored(body)
        shown = json.loads(request_view_json(request))
        assert shown == request_view(request)
        assert list(shown) == list(request_view(request))
        assert "secret" not in request_view_json(request).decode()


def test_an_answered_request_shows_its_redacted_answer() -> None:
    request = stored({"title": "t", "questions": [{"id": "pw", "kind": "secret", "prompt": "p"}]})
    request.answer = Answer(values={"pw": "hunter2-hunter2"}, responder=Responder(platform="api", user_id="ci"),
                            via="api", answered_at=NOW)
    shown = json.loads(request_view_json(request))
    assert shown == request_view(request) and shown["answer"]["values"] == {"pw": "[secret]"}


async def test_served_by_the_asgi_route_and_still_documented(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        created = await client.post("/v1/requests", json=BODIES[1])
        assert created.status_code == 201 and created.headers["content-type"] == "application/json"
        assert created.json()["callback"] == {"url": BODIES[1]["callback"]["url"]}  # type: ignore[index]
        fetched = (await client.get(f"/v1/requests/{created.json()['id']}")).json()
        assert {k: v for k, v in fetched.items() if k in created.json()} == created.json() | {
            "state": fetched["state"], "updated_at": fetched["updated_at"]}
        again = await client.post("/v1/requests", json=BODIES[1])
        assert again.status_code == 200 and again.json()["id"] == created.json()["id"]
        assert (await client.put("/v1/requests", json=BODIES[0])).status_code == 405
        invalid = await client.post("/v1/requests", json={"title": "no questions"})
        assert invalid.status_code == 422 and "questions" in invalid.json()["detail"]
        operation = (await client.get("/openapi.json")).json()["paths"]["/v1/requests"]["post"]
        assert set(operation["responses"]) >= {"200", "201", "401", "413", "422"}


async def test_a_submitted_request_is_what_its_stored_copy_reads_back(tmp_path: Path) -> None:
    """What the service hands back (and publishes) is what the store reads back."""
    async with running_bridge(tmp_path) as bridge:
        for body in BODIES:
            saved, created = await bridge.service.submit(RequestIn.model_validate(body), source="webhook")
            assert created
            await bridge.service.drain()  # its posting done: pending → posted
            read = await bridge.store.get_request(saved.id)
            assert read is not None and read.state.value == "posted"
            moving = {"state", "updated_at"}
            assert read.model_dump(exclude=moving) == saved.model_dump(exclude=moving)
            assert Request.model_validate_json(saved.model_dump_json()) == saved
