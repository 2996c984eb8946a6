"""agent-world's world/chat HITL routes, as PROTOCOLS.md §5 describes them.

- `POST /api/worlds/{world}/setChat/{chatId}` makes the chat current, replays its
  pending prompts into the runtime and answers `{world, chatId, success, hitlPrompts:
  [{chatId, prompt}]}` (`success: false` and the old current chat for an unknown chat).
- `POST /api/worlds/{world}/hitl/respond` with `{requestId, optionId}`, `{requestId,
  answers: [{questionId, optionIds}]}` or `{requestId, skipped: true}` answers
  `{accepted, reason?}`. A prompt that is stored in a chat but not in the runtime (the
  server restarted, or its chat was never made current) is refused with "No pending HITL
  request found…" until `setChat` replays it.
- `POST /api/worlds/{world}/tool-results` with `{tool_call_id, toolName:
  "client.humanIntervention", agentId, choice}` answers the older `{prompt, options}`
  tool; `choice` must be one of the options.
Errors: `{error, code, details?}` with 400 / 404.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.engines.harness import FakeServer

HUMAN_TOOL = "client.humanIntervention"


@dataclass
class World:
    name: str
    chats: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # chat → stored prompts
    current_chat: str | None = None
    runtime: dict[str, str] = field(default_factory=dict)  # requestId → chatId (pending in memory)
    answers: list[dict[str, Any]] = field(default_factory=list)


def select_prompt(
    questions: list[tuple[str, str, list[tuple[str, str]]]],
    *,
    multiple: bool = False,
    allow_skip: bool = False,
    request_id: str | None = None,
) -> dict[str, Any]:
    """The current tool's prompt: questions given as (id, question, [(option id, label)])."""
    return {
        "requestId": request_id or str(uuid.uuid4()),
        "type": "multiple-select" if multiple else "single-select",
        "allowSkip": allow_skip,
        "title": "Agent needs a decision",
        "questions": [
            {
                "id": qid,
                "header": qid.title(),
                "question": text,
                "options": [{"id": oid, "label": label} for oid, label in options],
            }
            for qid, text, options in questions
        ],
    }


def legacy_prompt(prompt: str, options: list[str], agent_id: str = "planner") -> dict[str, Any]:
    """The older `{prompt, options, context}` tool call, answered through tool-results."""
    call_id = f"call_{uuid.uuid4().hex[:10]}"
    return {
        "requestId": call_id,
        "toolCallId": call_id,
        "toolName": HUMAN_TOOL,
        "agentId": agent_id,
        "prompt": prompt,
        "options": options,
        "context": {"why": "legacy"},
    }


class FakeAgentWorld:
    def __init__(self) -> None:
        self.worlds: dict[str, World] = {}
        app = Starlette(
            routes=[
                Route("/api/worlds/{world}/setChat/{chat}", self._set_chat, methods=["POST"]),
                Route("/api/worlds/{world}/hitl/respond", self._respond, methods=["POST"]),
                Route("/api/worlds/{world}/tool-results", self._tool_results, methods=["POST"]),
            ]
        )
        self.server = FakeServer(app, error_body={"error": "Failed", "code": "INTERNAL"})

    @property
    def url(self) -> str:
        return self.server.url

    def world(self, name: str) -> World:
        return self.worlds.setdefault(name, World(name))

    def ask(self, world: str, chat: str, prompt: dict[str, Any], *, live: bool = True) -> str:
        """An agent in `chat` asks; `live=False` stores it only in the chat (not the runtime)."""
        w = self.world(world)
        w.chats.setdefault(chat, []).append(prompt)
        if live:
            w.runtime[prompt["requestId"]] = chat
        return str(prompt["requestId"])

    def restart(self, world: str) -> None:
        """The server restarted: prompts survive in chats, the runtime map is empty."""
        self.world(world).runtime.clear()

    def resolve_elsewhere(self, world: str, request_id: str) -> None:
        w = self.world(world)
        self._drop(w, request_id)

    def _drop(self, w: World, request_id: str) -> None:
        w.runtime.pop(request_id, None)
        for prompts in w.chats.values():
            prompts[:] = [p for p in prompts if p["requestId"] != request_id]

    def _find(self, w: World, request_id: str) -> dict[str, Any] | None:
        for prompts in w.chats.values():
            for p in prompts:
                if p["requestId"] == request_id:
                    return p
        return None

    async def _body(self, request: Request) -> Any:
        try:
            return json.loads(await request.body())
        except ValueError:
            return None

    async def _set_chat(self, request: Request) -> JSONResponse:
        name, chat = request.path_params["world"], request.path_params["chat"]
        if name not in self.worlds:
            return JSONResponse({"error": "World not found", "code": "WORLD_NOT_FOUND"}, status_code=404)
        w = self.worlds[name]
        world_json = {"id": name, "name": name, "currentChatId": w.current_chat}
        if chat not in w.chats:
            return JSONResponse({"world": world_json, "chatId": w.current_chat, "success": False})
        w.current_chat = chat
        for p in w.chats[chat]:
            w.runtime[p["requestId"]] = chat
        world_json["currentChatId"] = chat
        prompts = [{"chatId": chat, "prompt": p} for p in w.chats[chat]]
        return JSONResponse({"world": world_json, "chatId": chat, "success": True, "hitlPrompts": prompts})

    async def _respond(self, request: Request) -> JSONResponse:
        name = request.path_params["world"]
        if name not in self.worlds:
            return JSONResponse({"error": "World not found", "code": "WORLD_NOT_FOUND"}, status_code=404)
        w = self.worlds[name]
        body = await self._body(request)
        if not isinstance(body, dict) or not isinstance(body.get("requestId"), str):
            return JSONResponse(
                {"error": "Invalid request body", "code": "VALIDATION_ERROR", "details": ["requestId"]},
                status_code=400,
            )
        rid = body["requestId"]
        prompt = self._find(w, rid)
        if prompt is None or rid not in w.runtime:
            return JSONResponse({"accepted": False, "reason": f"No pending HITL request found for requestId '{rid}'."})
        reason = _check(prompt, body)
        if reason:
            return JSONResponse({"accepted": False, "reason": reason})
        w.answers.append(body)
        self._drop(w, rid)
        return JSONResponse({"accepted": True})

    async def _tool_results(self, request: Request) -> JSONResponse:
        name = request.path_params["world"]
        if name not in self.worlds:
            return JSONResponse({"error": "World not found", "code": "WORLD_NOT_FOUND"}, status_code=404)
        w = self.worlds[name]
        body = await self._body(request)
        if not isinstance(body, dict) or body.get("toolName") != HUMAN_TOOL:
            return JSONResponse({"error": "Invalid request body", "code": "VALIDATION_ERROR"}, status_code=400)
        prompt = self._find(w, str(body.get("tool_call_id")))
        if prompt is None:
            return JSONResponse({"error": "Tool call not found", "code": "TOOL_CALL_NOT_FOUND"}, status_code=404)
        if body.get("choice") not in prompt["options"]:
            return JSONResponse({"error": "Invalid choice", "code": "INVALID_CHOICE"}, status_code=400)
        w.answers.append(body)
        self._drop(w, prompt["requestId"])
        return JSONResponse({"success": True})


def _check(prompt: dict[str, Any], body: dict[str, Any]) -> str | None:
    rid = prompt["requestId"]
    if body.get("skipped") is True:
        return None if prompt.get("allowSkip") else f"Request '{rid}' cannot be skipped."
    questions = {q["id"]: {o["id"] for o in q["options"]} for q in prompt.get("questions", [])}
    if "optionId" in body:
        if len(questions) != 1 or body["optionId"] not in next(iter(questions.values())):
            return f"Invalid option '{body['optionId']}' for requestId '{rid}'."
        return None
    answers = body.get("answers")
    if not isinstance(answers, list) or not answers:
        return "optionId, answers or skipped is required."
    for a in answers:
        ids = a.get("optionIds") if isinstance(a, dict) else None
        qid = a.get("questionId") if isinstance(a, dict) else None
        if qid not in questions or not isinstance(ids, list) or not ids:
            return f"Invalid answer for requestId '{rid}'."
        if prompt.get("type") == "single-select" and len(ids) != 1:
            return f"Question '{qid}' takes one option."
        if any(i not in questions[qid] for i in ids):
            return f"Invalid option for question '{qid}'."
    return None
