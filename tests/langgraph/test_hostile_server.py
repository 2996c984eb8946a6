"""A LangGraph server that answers with JSON nested deeper than Python's parser goes, or with
an interrupt nested hundreds of levels deep: the source reports the first as a problem and
turns the second into a request (shown, not editable), and never crashes or stalls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.langgraph.mapping import map_interrupt, safe_context_value
from bridge.http.loopback import serving
from bridge.models import QuestionKind, RequestIn
from tests.harness import running_bridge, wait_for

INTERRUPT_ID = "0123456789abcdef0123456789abcdef"


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


class Hostile:
    """Answers /threads/search with `deep_reply` (raw JSON text) or one deeply nested interrupt."""

    def __init__(self) -> None:
        self.deep_reply: str | None = None
        self.args_depth = 400

    async def search(self, request: Request) -> Response:
        body = await request.json()
        if self.deep_reply is not None:
            text = self.deep_reply
        elif body.get("status") == "interrupted":
            text = json.dumps([{"thread_id": "t1", "state_updated_at": "2026-01-01T00:00:00Z"}])
        else:
            value = '{"action_requests": [{"name": "drop_table", "args": ' + deep(self.args_depth) + "}]}"
            text = ('[{"thread_id": "t1", "status": "interrupted", "state_updated_at": "2026-01-01T00:00:00Z",'
                    ' "metadata": {"graph_id": "g"}, "interrupts": {"task": [{"id": "' + INTERRUPT_ID
                    + '", "value": ' + value + "}]}}]")
        return Response(text, media_type="application/json")


@asynccontextmanager
async def hostile_server() -> AsyncIterator[tuple[Hostile, str]]:
    hostile = Hostile()
    app = Starlette(routes=[Route("/threads/search", hostile.search, methods=["POST"])])
    async with serving(app, "the hostile LangGraph server") as port:
        yield hostile, f"http://127.0.0.1:{port}"


async def test_a_reply_too_deep_to_parse_is_a_problem_and_a_deep_interrupt_a_request(tmp_path: Path) -> None:
    async with hostile_server() as (hostile, url):
        hostile.deep_reply = deep(100_000)
        config = {"sources": [{"type": "langgraph", "base_url": url, "poll_every": "50ms"}]}
        async with running_bridge(tmp_path, config) as daemon, \
                httpx.AsyncClient(base_url=daemon.base_url) as client:
            async def problem() -> str | None:
                sources = (await client.get("/v1/sources")).json()["sources"]
                shown = sources[0]["problems"]
                return shown[0]["reason"] if shown else None

            reason = await wait_for(problem)
            assert "nested too deeply" in reason
            hostile.deep_reply = None  # the server recovers, with a 400-level interrupt
            request = await wait_for(lambda: daemon.store.list_requests(source="langgraph"))
            assert [q.kind for q in request[0].questions] == [QuestionKind.confirm]  # no Edit offered
            assert await wait_for(lambda: _no_problem(client))


async def _no_problem(client: httpx.AsyncClient) -> bool:
    return not (await client.get("/v1/sources")).json()["sources"][0]["problems"]


@pytest.mark.parametrize("levels", [15, 17, 100, 450, 900])
@pytest.mark.parametrize("shape", ["plain", "inbox", "hitl"])
def test_interrupts_of_any_depth_map_to_a_valid_request(levels: int, shape: str) -> None:
    args: Any = json.loads(deep(levels))
    value: Any = {
        "plain": args,
        "inbox": [{"action_request": {"action": "x", "args": args},
                   "config": {"allow_accept": True, "allow_edit": True, "allow_ignore": True}}],
        "hitl": {"action_requests": [{"name": "x", "args": args}]},
    }[shape]
    mapping = map_interrupt(value)
    request = RequestIn(title=mapping.title, questions=mapping.questions,
                        context={"interrupt": safe_context_value(value)})
    json.dumps(mapping.plan.to_json())  # storable
    editable = any(q.kind is QuestionKind.edit for q in request.questions)
    assert editable == (shape != "plain" and levels <= 15)
