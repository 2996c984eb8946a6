"""A body nested any depth deep gets the same clean 422 as one nested 17 levels: never a 500
or a reset connection (nothing walks it recursively before validation refuses it)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from bridge.models import _depth, has_lone_surrogate
from tests.harness import running_bridge

DEPTHS = (17, 450, 5000, 40_000)  # 40,000 object levels: 240 KB, under the body limit
JSON = {"content-type": "application/json"}


def nested(depth: int, kind: str = "dict") -> str:
    """JSON text nesting `depth` levels (objects or arrays), 2.8 KB at 450 object levels."""
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def intake(where: str, deep: str) -> str:
    question = '{"id": "q", "prompt": "?"}'
    if where == "context":
        return f'{{"title": "t", "questions": [{question}], "context": {{"x": {deep}}}}}'
    if where == "labels":
        return f'{{"title": "t", "questions": [{question}], "labels": {{"x": {deep}}}}}'
    return f'{{"title": "t", "questions": [{{"id": "q", "kind": "edit", "prompt": "?", "default": {deep}}}]}}'


async def test_any_depth_gets_the_same_422_in_context_labels_defaults_and_answers(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url, timeout=30) as client:
        for depth in DEPTHS:
            for kind in ("dict", "list"):
                for where in ("context", "labels", "default"):
                    r = await client.post("/v1/requests", content=intake(where, nested(depth, kind)), headers=JSON)
                    assert r.status_code == 422, (depth, kind, where, r.text)
                    detail = r.json()["detail"]
                    assert ("nested deeper than 16 levels" in detail if where != "labels"
                            else "labels" in detail or "nested deeper" in detail), (depth, where, detail)

        created = []
        for kind in ("edit", "text", "confirm", "form"):
            question = {"id": "q", "kind": kind, "prompt": "?"}
            if kind == "form":
                question["fields"] = [{"name": "f"}]
            r = await client.post("/v1/requests", json={"title": kind, "questions": [question]})
            assert r.status_code == 201, r.text
            created.append(r.json()["id"])
        for request_id in created:
            for depth in DEPTHS:
                for body in (f'{{"value": {nested(depth)}, "responder": "ana"}}',
                             f'{{"values": {{"q": {nested(depth, "list")}}}, "responder": "ana"}}'):
                    r = await client.post(f"/v1/requests/{request_id}/answer", content=body, headers=JSON)
                    assert r.status_code == 422, (request_id, depth, r.text)
                    assert "nested deeper than 16 levels" in r.json()["detail"]
            assert (await client.get(f"/v1/requests/{request_id}")).json()["state"] != "answered"
        # 16 levels still pass, and the daemon kept serving throughout
        ok = await client.post(f"/v1/requests/{created[0]}/answer",
                               content=f'{{"value": {nested(15)}, "responder": "ana"}}', headers=JSON)
        assert ok.status_code == 200, ok.text
        assert (await client.get("/healthz")).status_code == 200


@pytest.mark.parametrize("depth", [0, 1, 16, 17, 100_000])
def test_depth_and_surrogate_checks_walk_without_recursion(depth: int) -> None:
    value: object = "\ud800"
    for _ in range(depth):
        value = {"k": [value]} if depth < 100 else [value]
    levels = depth * 2 if depth < 100 else depth
    assert _depth(value, limit=10**6) == levels
    assert _depth(value) == min(levels, 17)
    assert has_lone_surrogate(value)
