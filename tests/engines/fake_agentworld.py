"""agent-world's world/chat HITL routes as agent-world 0.16 has them.

agent-world is not published on the npm registry (`npm view agent-world` → 404), so it cannot
be installed here; this fake follows its source instead (yysun/agent-world: `core/hitl.ts`
of the structured `ask_user_input` migration, April 2026, and `server/api.ts`):

- `POST /api/worlds/{world}/setChat/{chatId}` makes the chat current and answers `{world,
  chatId, success, hitlPrompts: [{chatId, prompt}]}` (`success: false` and the old current
  chat for an unknown chat). The prompts are read from the chat's stored messages
  (message-authoritative), each `{requestId, type, allowSkip, questions: [{id, header,
  question, options: [{id, label, description?}]}], metadata, agentName, toolName,
  toolCallId}`.
- `POST /api/worlds/{world}/hitl/respond` with `{requestId, chatId?, optionId}`,
  `{requestId, chatId?, answers: [{questionId, optionIds}]}` or `{requestId, chatId?,
  skipped: true}` answers `{accepted, reason?}`, checked against the runtime's pending map
  with agent-world's own reasons. After a restart the map is empty until the chat's turn is
  restored, which here happens on the `restored_after`-th `setChat` of that chat (agent-world
  restores it in the background). Meanwhile an answer is refused with the reason the
  restart was told to give (`restart(refusal=...)`): "No pending HITL request found…"
  (`NOT_PENDING`, older servers, or an answer without `chatId`) or, for an answer naming its
  `chatId`, "HITL request '…' is pending in chat messages but the chat is not yet activated
  on this server. Call POST …/setChat/… to activate, then retry this request."
  (`NOT_ACTIVATED`, agent-world 15d91319 / 458d539e).
- The older `POST /api/worlds/{world}/tool-results` route is gone (Express answers 404).
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

Option = tuple[str, str] | tuple[str, str, str]  # (id, label) or (id, label, description)
NOT_PENDING = "not_pending"
NOT_ACTIVATED = "not_activated"


@dataclass
class World:
    name: str
    chats: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # chat → pending prompts (messages)
    current_chat: str | None = None
    runtime: dict[str, str] = field(default_factory=dict)  # requestId → chatId (pending map, in memory)
    restoring: dict[str, int] = field(default_factory=dict)  # chat → setChat calls until its turn is back
    refusal: str = NOT_PENDING  # what an answer gets while its chat is not restored
    answers: list[dict[str, Any]] = field(default_factory=list)


def select_prompt(
    questions: list[tuple[str, str, list[Option]]],
    *,
    multiple: bool = False,
    allow_skip: bool = False,
    request_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    agent: str | None = "planner",
) -> dict[str, Any]:
    """A pending prompt as setChat lists it: questions given as (id, question, options)."""
    rid = request_id or f"call_{uuid.uuid4().hex[:12]}"
    return {
        "requestId": rid,
        "type": "multiple-select" if multiple else "single-select",
        "allowSkip": allow_skip,
        "questions": [
            {
                "id": qid,
                "header": qid.replace("-", " ").title(),
                "question": text,
                "options": [
                    {"id": o[0], "label": o[1], **({"description": o[2]} if len(o) > 2 else {})} for o in options
                ],
            }
            for qid, text, options in questions
        ],
        "metadata": metadata,
        "agentName": agent,
        "toolName": "ask_user_input",
        "toolCallId": rid,
    }


class FakeAgentWorld:
    def __init__(self) -> None:
        self.worlds: dict[str, World] = {}
        app = Starlette(
            routes=[
                Route("/api/worlds/{world}/setChat/{chat}", self._set_chat, methods=["POST"]),
                Route("/api/worlds/{world}/hitl/respond", self._respond, methods=["POST"]),
            ]
        )
        self.server = FakeServer(app, error_body={"error": "Failed", "code": "INTERNAL"})

    @property
    def url(self) -> str:
        return self.server.url

    def world(self, name: str) -> World:
        return self.worlds.setdefault(name, World(name))

    def ask(self, world: str, chat: str, prompt: dict[str, Any]) -> str:
        """An agent in `chat` asks (the prompt is in the chat's messages and the runtime)."""
        w = self.world(world)
        w.chats.setdefault(chat, []).append(prompt)
        w.runtime[prompt["requestId"]] = chat
        return str(prompt["requestId"])

    def restart(self, world: str, restored_after: int = 1, refusal: str = NOT_PENDING) -> None:
        """The server restarted: prompts survive in the chats' messages, the pending map is
        empty until a chat's turn is restored (on its `restored_after`-th setChat); answers
        meanwhile get `refusal` (NOT_PENDING or NOT_ACTIVATED)."""
        w = self.world(world)
        w.runtime.clear()
        w.restoring = {chat: restored_after for chat in w.chats}
        w.refusal = refusal

    def resolve_elsewhere(self, world: str, request_id: str) -> None:
        self._drop(self.world(world), request_id)

    def _drop(self, w: World, request_id: str) -> None:
        w.runtime.pop(request_id, None)
        for prompts in w.chats.values():
            prompts[:] = [p for p in prompts if p["requestId"] != request_id]

    def _find(self, w: World, request_id: str) -> dict[str, Any] | None:
        return next((p for prompts in w.chats.values() for p in prompts if p["requestId"] == request_id), None)

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
        if chat in w.restoring:
            w.restoring[chat] -= 1
            if w.restoring[chat] <= 0:  # the chat's turn is back: its prompts are pending again
                del w.restoring[chat]
                w.runtime.update({p["requestId"]: chat for p in w.chats[chat]})
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
        if not body.get("optionId") and not isinstance(body.get("answers"), list) and body.get("skipped") is not True:
            return JSONResponse({"accepted": False, "reason": "worldId, requestId, and either answers, skipped, "
                                                              "or optionId are required."})
        prompt = self._find(w, rid)
        asked_in = next((chat for chat, prompts in w.chats.items() if prompt in prompts), None)
        if (prompt is not None and rid not in w.runtime and w.refusal == NOT_ACTIVATED
                and body.get("chatId") == asked_in and asked_in in w.restoring):
            return JSONResponse({"accepted": False, "reason": (
                f"HITL request '{rid}' is pending in chat messages but the chat is not yet activated on this "
                f"server. Call POST /worlds/{name}/setChat/{asked_in} to activate, then retry this request.")})
        if prompt is None or rid not in w.runtime:
            return JSONResponse({"accepted": False, "reason": f"No pending HITL request found for requestId '{rid}'."})
        chat = w.runtime[rid]
        if "chatId" in body and body["chatId"] != chat:
            return JSONResponse({"accepted": False,
                                 "reason": f"Request '{rid}' belongs to chat '{chat}', not '{body['chatId']}'."})
        reason = _check(prompt, body)
        if reason:
            return JSONResponse({"accepted": False, "reason": reason})
        w.answers.append(body)
        self._drop(w, rid)
        return JSONResponse({"accepted": True})


def _check(prompt: dict[str, Any], body: dict[str, Any]) -> str | None:
    """agent-world's normalizeSubmittedAnswers, with its reasons."""
    rid = prompt["requestId"]
    if body.get("skipped") is True:
        return None if prompt.get("allowSkip") else f"Request '{rid}' does not allow skipping."
    questions = {q["id"]: {o["id"] for o in q["options"]} for q in prompt["questions"]}
    answers = body.get("answers") if isinstance(body.get("answers"), list) else []
    if not answers:
        option = str(body.get("optionId") or "").strip()
        if not option:
            return "answers are required when skipped is false."
        answers = [{"questionId": prompt["questions"][0]["id"], "optionIds": [option]}]
    seen: set[str] = set()
    for a in answers:
        qid = str(a.get("questionId") or "").strip() if isinstance(a, dict) else ""
        if not qid:
            return "Each HITL answer requires a questionId."
        if qid not in questions:
            return f"Invalid questionId '{qid}' for requestId '{rid}'."
        if qid in seen:
            return f"Duplicate answer for questionId '{qid}'."
        seen.add(qid)
        ids = [str(i).strip() for i in a.get("optionIds") or [] if str(i).strip()]
        if not ids:
            return f"Answer for questionId '{qid}' requires at least one optionId."
        for option in dict.fromkeys(ids):
            if option not in questions[qid]:
                return f"Invalid option '{option}' for questionId '{qid}'."
        if prompt["type"] == "single-select" and len(set(ids)) != 1:
            return f"Question '{qid}' accepts exactly one option."
    missing = [q for q in questions if q not in seen]
    return f"Missing answer for questionId '{missing[0]}'." if missing else None
