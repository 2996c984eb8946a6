"""The agent-world source: pending prompts per configured world and chat, answered back.

Each poll asks `setChat` for every configured chat (one small request per chat) and
submits only prompts not seen before. agent-world reads a chat's pending prompts from its
stored messages, so a prompt gone from its chat while its request is still open was
answered elsewhere (agent-world's own UI): the request is withdrawn. Answers go through
`hitl/respond`, which checks agent-world's in-memory pending map; after a restart that map
is empty until the chat's turn is restored, so a refusal that says so for a prompt the chat
still lists is retried (see `_respond` and `refusals`). Supported: agent-world 0.16 (prompts with `questions`).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict, Field

from adapters.agentworld.mapping import NoAnswer, map_prompt, prompt_key, respond_body
from adapters.agentworld.refusals import Refusal, classify, reason_of
from adapters.polling import (
    NAME_PATTERN,
    EngineUnreadable,
    PolledEngineConfig,
    PolledEngineSource,
    describe,
    error_text,
)
from bridge.models import Request
from bridge.ports import DeliveryError, Outcome, RequestSink
from bridge.store.base import Store

log = logging.getLogger("hitl_bridge.agentworld")


class WorldChats(BaseModel):
    model_config = ConfigDict(extra="forbid")

    world: str = Field(min_length=1, max_length=200)
    chats: list[str] = Field(min_length=1, max_length=500)


class AgentWorldConfig(PolledEngineConfig):
    """`sources: - type: agentworld` (see docs/engines/teal-mastra-agentworld.md)."""

    name: str = Field(default="agentworld", pattern=NAME_PATTERN)
    base_url: str = Field(pattern=r"^https?://", max_length=2000)  # e.g. http://host:3000/api
    worlds: list[WorldChats] = Field(min_length=1)


class AgentWorldSource(PolledEngineSource):
    """Source port for agent-world (PROTOCOLS §5); scopes are "world/chat"."""

    engine_label = "agent-world"

    def __init__(self, config: AgentWorldConfig, store: Store | None = None) -> None:
        super().__init__(config, store)
        self.config = config

    def scope_of(self, request: Request) -> str | None:
        ref = request.source_ref
        if isinstance(ref.get("world"), str) and isinstance(ref.get("chat"), str):
            return f"{ref['world']}/{ref['chat']}"
        return None

    async def poll_once(self, sink: RequestSink) -> None:
        self.polls += 1
        for entry in self.config.worlds:
            for chat in entry.chats:
                await self._scan(sink, entry.world, chat)

    async def set_chat(self, world: str, chat: str) -> list[Any]:
        """The chat's pending prompts (`hitlPrompts[].prompt` for this chat)."""
        path = f"/worlds/{quote(world, safe='')}/setChat/{quote(chat, safe='')}"
        reply = await self.http.post(path)
        if reply.status_code >= 400:
            raise EngineUnreadable(f"HTTP {reply.status_code} from setChat: {error_text(reply)}")
        try:
            body = reply.json()
        except (ValueError, RecursionError):
            raise EngineUnreadable("setChat did not answer JSON") from None
        if not isinstance(body, dict):
            raise EngineUnreadable("setChat did not answer an object")
        if body.get("success") is False:
            raise EngineUnreadable(f"chat {chat!r} does not exist in world {world!r}")
        prompts = body.get("hitlPrompts", [])
        if not isinstance(prompts, list):
            raise EngineUnreadable("setChat: hitlPrompts is not a list")
        # an entry that is not an object stays in the list (as None): it makes the listing incomplete
        return [
            p.get("prompt") if isinstance(p, dict) else None
            for p in prompts
            if not isinstance(p, dict) or p.get("chatId", chat) == chat
        ]

    async def _scan(self, sink: RequestSink, world: str, chat: str) -> None:
        scope = f"{world}/{chat}"
        try:
            prompts = await self.set_chat(world, chat)
        except (httpx.HTTPError, EngineUnreadable) as exc:
            self.errors[scope] = describe(exc)
            log.warning("agentworld source %s: cannot read %s: %s", self.name, scope, describe(exc))
            return
        self.errors.pop(scope, None)
        known = self.known.setdefault(scope, set())
        seen: set[str] = set()
        complete = True  # every entry had an id: absence from the list then means "resolved"
        for prompt in prompts:
            key = prompt_key(world, chat, prompt)
            if key is None:
                complete = False
            else:
                seen.add(key)
                if key in known or key in self.unusable:
                    continue  # already a request (or already reported): no mapping, no store access
            try:
                mapped = map_prompt(world, chat, prompt)
            except ValueError as exc:  # InvalidPrompt, or a prompt the request model refuses
                log.warning("agentworld source %s: skipping a prompt in %s: %s", self.name, scope, exc)
                if key is not None:
                    self.unusable[key] = str(exc)
                continue
            ext = mapped.request.external_id or ""
            await sink.submit(mapped.request, source=self.name, source_ref=mapped.ref)
            known.add(ext)
        if not complete:
            return
        for gone in sorted(known - seen):
            await sink.withdraw(self.name, gone, "answered outside the bridge (no longer pending in agent-world)")
            known.discard(gone)

    # -- writing back -------------------------------------------------------------------
    async def deliver(self, outcome: Outcome) -> None:
        ref = outcome.request.source_ref
        if "requestId" not in ref:
            raise DeliveryError("the request carries no agent-world reference", permanent=True)
        if ref.get("form") == "legacy":
            raise DeliveryError("agent-world no longer has the tool-results route this older prompt needs; "
                                "answer it in agent-world", permanent=True)
        answer = outcome.answer if outcome.state in ("answered", "expired") else None
        try:
            body = respond_body(ref, answer)
        except NoAnswer as exc:
            if answer is None:
                return  # cancelled/expired without an answer and the prompt cannot be skipped
            raise DeliveryError(str(exc), permanent=True) from None
        rid = outcome.request.id
        # until a clear reply comes back the attempt counts as unclear (also when the outbox
        # cuts it off): a later "not pending" then means that attempt landed
        was_unclear = rid in self.ambiguous
        self.ambiguous.add(rid)
        await self._respond(rid, ref, body, was_unclear or answer is None)
        self.ambiguous.discard(rid)

    async def _respond(self, rid: str, ref: dict[str, Any], body: dict[str, Any], landed_if_gone: bool) -> None:
        """Send the answer. A refusal agent-world gives while its runtime has not restored
        the prompt (after a restart: see `refusals`) replays the chat with setChat and sends
        again; if agent-world still has not restored it, the answer is retried with backoff
        (within `delivery.give_up_after`). Any other refusal, or a prompt gone from its chat,
        fails the request with agent-world's reason."""
        path = f"/worlds/{quote(ref['world'], safe='')}/hitl/respond"
        verdict = await self._verdict(rid, await self.post_write_back(rid, path, body, landed_if_gone), landed_if_gone)
        if verdict.get("accepted") is True:
            return
        reason = reason_of(verdict)
        if classify(reason) is Refusal.FINAL:
            self.ambiguous.discard(rid)
            raise DeliveryError(f"agent-world refused the answer: {reason}", permanent=True)
        try:
            pending = await self.set_chat(ref["world"], ref["chat"])
        except (httpx.HTTPError, EngineUnreadable) as exc:
            raise DeliveryError(f"agent-world refused the answer ({reason}) and the "
                                f"chat could not be replayed: {describe(exc)}") from None
        if not any(isinstance(p, dict) and ref["requestId"] in (p.get("requestId"), p.get("toolCallId"))
                   for p in pending):
            if landed_if_gone:
                return  # our earlier attempt landed, or nothing was owed
            self.ambiguous.discard(rid)
            raise DeliveryError(f"agent-world no longer waits for this answer (answered elsewhere?): {reason}",
                                permanent=True)
        again = await self._verdict(rid, await self.post_write_back(rid, path, body, landed_if_gone), landed_if_gone)
        if again.get("accepted") is True:
            return
        reason = reason_of(again)
        if classify(reason) is Refusal.REPLAY_CHAT:
            raise DeliveryError("agent-world lists the prompt but has not restored it yet (restarted?); "
                                f"retrying: {reason}")
        self.ambiguous.discard(rid)
        raise DeliveryError(f"agent-world refused the answer: {reason}", permanent=True)

    def _checked(self, rid: str, reply: httpx.Response, was_unclear: bool) -> Any:
        """The reply's JSON. 5xx and 429 are retried; other 4xx refuse the answer for good; a
        body that is not JSON is retried."""
        if reply.status_code >= 500 or reply.status_code == 429:
            if not was_unclear:
                self.ambiguous.discard(rid)
            raise DeliveryError(f"agent-world answered HTTP {reply.status_code}: {error_text(reply)}")
        if reply.status_code >= 400:
            self.ambiguous.discard(rid)
            raise DeliveryError(f"agent-world refused the answer (HTTP {reply.status_code}: {error_text(reply)})",
                                permanent=True)
        try:
            return reply.json()
        except (ValueError, RecursionError):
            raise DeliveryError("agent-world answered with something that is not JSON") from None

    async def _verdict(self, rid: str, reply: httpx.Response, was_unclear: bool) -> dict[str, Any]:
        verdict = self._checked(rid, reply, was_unclear)
        if not isinstance(verdict, dict) or not isinstance(verdict.get("accepted"), bool):
            raise DeliveryError("agent-world's reply has no `accepted` flag")
        return verdict
