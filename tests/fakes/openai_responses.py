"""A fake OpenAI Responses API (`POST /v1/responses`) on 127.0.0.1 for the real `openai`
client and the OpenAI Agents SDK.

It checks what the real API checks first (a bearer key, a `model`, an `input` list whose
function-call outputs answer calls the model made) and replies with scripted turns: each
turn is a list of output items, built with `tool_call` and `message`. Every request body is
recorded, so a test can read what the SDK sent back to the model.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bridge.http.loopback import serving

API_KEY = "sk-test-fake"


def tool_call(call_id: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": tool,
            "arguments": json.dumps(arguments), "status": "completed"}


def message(text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{abs(hash(text))}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


@dataclass
class FakeResponses:
    turns: list[list[dict[str, Any]]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""

    def outputs_sent_back(self, request: int = -1) -> dict[str, str]:
        """call_id -> the tool output the SDK sent the model in one request."""
        return {item["call_id"]: item["output"] for item in self.requests[request]["input"]
                if isinstance(item, dict) and item.get("type") == "function_call_output"}

    async def handle(self, request: Request) -> JSONResponse:
        if request.headers.get("authorization") != f"Bearer {API_KEY}":
            return _error(401, "invalid_api_key", "Incorrect API key provided")
        body = await request.json()
        if not body.get("model") or not isinstance(body.get("input"), list):
            return _error(400, "invalid_request_error", "model and input are required")
        made = {out["call_id"] for turn in self.turns[:len(self.requests)] for out in turn  # the calls returned
                if out["type"] == "function_call"}
        for item in body["input"]:
            if item.get("type") == "function_call_output" and item.get("call_id") not in made:
                return _error(400, "invalid_request_error", f"No tool call found for {item.get('call_id')}")
        self.requests.append(body)
        if len(self.requests) > len(self.turns):
            return _error(500, "server_error", "the test's script has no more turns")
        output = self.turns[len(self.requests) - 1]
        return JSONResponse({
            "id": f"resp_{len(self.requests)}", "object": "response", "created_at": int(time.time()),
            "model": body["model"], "status": "completed", "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "usage": {
                "input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}})


def _error(status: int, code: str, text: str) -> JSONResponse:
    return JSONResponse({"error": {"message": text, "type": code, "code": code, "param": None}}, status_code=status)


@contextlib.asynccontextmanager
async def fake_responses(turns: list[list[dict[str, Any]]]) -> AsyncIterator[FakeResponses]:
    fake = FakeResponses(turns)
    app = Starlette(routes=[Route("/v1/responses", fake.handle, methods=["POST"])])
    async with serving(app, "the fake OpenAI Responses API") as port:
        fake.base_url = f"http://127.0.0.1:{port}/v1"
        yield fake
