"""A request's copies in Teams: posted to each target, re-rendered for everyone when the
request changes, reminded as replies in their threads.

Rendering is cards.py's (pure); calls go through the `Connector`. Where a target lives is
a conversation reference (references.py); a person with none yet gets a one-to-one chat
opened proactively in their tenant.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from adapters.teams.cards import attachment, reminder_text, request_card
from adapters.teams.connector import Connector, TeamsCallFailed
from adapters.teams.references import Reference, References
from adapters.teams.targets import BadTarget, parse_target
from bridge.models import Request
from bridge.ports import BridgeAPI, PostResult
from bridge.timing_view import timing_notes

log = logging.getLogger("hitl_bridge.teams")


def card_activity(request: Request, notes: Sequence[str], *, personal: bool) -> dict[str, Any]:
    return {"type": "message", "summary": f"Input needed: {request.title[:200]}",
            "attachments": [attachment(request_card(request, notes, personal=personal))]}


class NoReference(Exception):
    """The bot has not been added where a target points."""


class Copies:
    def __init__(self, bridge: Callable[[], BridgeAPI], connector: Connector, references: References,
                 tenant_id: str) -> None:
        self._bridge = bridge
        self.connector = connector
        self.references = references
        self.tenant_id = tenant_id
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @property
    def api(self) -> BridgeAPI:
        return self._bridge()

    async def notes(self, request: Request) -> list[str]:
        return await timing_notes(self.api, request) if request.is_open else []

    async def where(self, target: str) -> Reference:
        """The conversation of `target`; a person's one-to-one chat is opened when needed."""
        parsed = parse_target(target)
        known = await self.references.get(parsed.key)
        if known is not None:
            return known
        if parsed.kind != "user":
            raise NoReference(f"the bot has not been added to {target}: add the app to that "
                              f"{'team' if parsed.kind == 'channel' else 'chat'} first")
        tenant = await self.references.tenant(self.tenant_id)
        if tenant is None:
            raise NoReference(f"no tenant is known to open a chat with {target}: install the app "
                              "(for that person or in a team) first")
        tenant_id, service_url = tenant
        conversation_id = await self.connector.open_personal(service_url, tenant_id, parsed.value)
        reference = Reference(service_url, conversation_id, tenant_id)
        await self.references.remember(parsed.key, reference)
        return reference

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        notes = await self.notes(request)
        return list(await asyncio.gather(*(self._post_one(request, t, notes) for t in targets)))

    async def _post_one(self, request: Request, target: str, notes: Sequence[str]) -> PostResult:
        try:
            reference = await self.where(target)
            personal = parse_target(target).kind == "user"
            activity_id = await self.connector.send(reference.service_url, reference.conversation_id,
                                                    card_activity(request, notes, personal=personal))
        except (BadTarget, NoReference, TeamsCallFailed) as exc:
            return PostResult(target=target, ok=False, error=str(exc))
        return PostResult(target=target, ref={**reference.as_dict(), "activity_id": activity_id,
                                              "personal": personal})

    async def update(self, request: Request) -> None:
        """Re-render every copy from the stored request, one update of a request at a time
        (a late vote update never puts the buttons back on an answered card)."""
        lock = self._locks.get(request.id)
        if lock is None:
            lock = self._locks[request.id] = asyncio.Lock()
        async with lock:
            request = await self.api.get(request.id) or request
            notes = await self.notes(request)
            posts = [p for p in await self.api.store.list_posts(request.id, "teams")
                     if p.ok and p.ref.get("activity_id")]

            async def one(ref: dict[str, Any]) -> None:
                try:
                    await self.connector.update(str(ref["service_url"]), str(ref["conversation_id"]),
                                                str(ref["activity_id"]),
                                                card_activity(request, notes, personal=bool(ref.get("personal"))))
                except TeamsCallFailed as exc:
                    log.warning("teams: could not update %s: %s", request.id, exc)

            await asyncio.gather(*(one(p.ref) for p in posts))

    async def card_for(self, request_id: str, *, personal: bool) -> dict[str, Any] | None:
        """The current card of a request (what an invoke answers with)."""
        request = await self.api.get(request_id)
        if request is None:
            return None
        return request_card(request, await self.notes(request), personal=personal)

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        posts = [p for p in await self.api.store.list_posts(request.id, "teams")
                 if p.ok and p.target in targets and p.ref.get("activity_id")]
        text = {"type": "message", "text": reminder_text(request)}

        async def one(ref: dict[str, Any]) -> None:
            try:
                await self.connector.reply(str(ref["service_url"]), str(ref["conversation_id"]),
                                           str(ref["activity_id"]), text)
            except TeamsCallFailed as exc:
                log.warning("teams: reminder for %s failed: %s", request.id, exc)

        await asyncio.gather(*(one(p.ref) for p in posts))
