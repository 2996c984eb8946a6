"""Many decisions at once in Slack, and saying you are away: the `/hitl` command and the
buttons of a batch message (batch_view.py). What to group, who may answer, and each item's
fate are the core's (bridge.batches through `BridgeAPI.answer_batch`); this module only
turns Slack payloads into those calls and the results back into a message.

    /hitl batch                                   alike requests waiting for you, one DM message each
    /hitl away @bo until 2026-12-24T18:00+01:00   a delegation window (or: for 3d)
    /hitl back                                    end it
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp

from adapters.slack.batch_view import (
    APPROVE_ACTION,
    EXCLUDE_ACTION,
    EXCLUDE_BLOCK,
    LISTED,
    REVIEW_ACTION,
    batch_message,
    results_message,
)
from adapters.slack.calls import SlackCallFailed
from adapters.slack.directory import Directory
from adapters.slack.sender import SlackSender
from bridge.away_words import AwayWordsError, parse_away
from bridge.errors import BridgeError
from bridge.models import Responder, utcnow
from bridge.ports import BridgeAPI

log = logging.getLogger("hitl_bridge.slack")
VIA = "slack"
NAMESPACE = "slack_batches"
KEEP = timedelta(days=1)
COMMAND = re.compile(r"^/hitl")
MENTION = re.compile(r"^<@([A-Z0-9]+)(?:\|[^>]*)?>$")
HELP = ("`/hitl batch`: alike requests waiting for you, to approve at once · "
        "`/hitl away @person until 2026-12-24T18:00+01:00` (or `for 3d`) · `/hitl back`")


class BatchListeners:
    """Bolt listeners for `/hitl` and the batch buttons, over the bridge and the sender."""

    def __init__(self, bridge: Callable[[], BridgeAPI], sender: SlackSender, directory: Directory) -> None:
        self.bridge = bridge
        self.sender = sender
        self.directory = directory

    def register(self, app: AsyncApp) -> None:
        app.command(COMMAND)(self.on_command)
        app.action(APPROVE_ACTION)(self.on_approve)
        app.action(REVIEW_ACTION)(self.on_review)
        app.action(EXCLUDE_ACTION)(self.on_exclude)

    # /hitl ----------------------------------------------------------------------------------------
    async def on_command(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        user_id = str(command.get("user_id", ""))
        words = str(command.get("text", "")).split()
        verb = words[0].lower() if words else ""
        if not user_id or verb not in ("batch", "away", "back"):
            await ack(text=HELP)
            return
        me = Responder(platform="slack", user_id=user_id)
        try:
            if verb == "batch":
                await ack(text=await self.offer_batches(me))
            elif verb == "away":
                await ack(text=await self.away(me, words[1:]))
            else:
                await ack(text=await self.back(me))
        except (BridgeError, AwayWordsError) as exc:
            await ack(text=f"Not done: {exc}")

    async def offer_batches(self, me: Responder) -> str:
        api = self.bridge()
        found = await api.batches_waiting(me, channel=VIA, here=[f"slack:@{me.user_id}", f"slack:{me.user_id}"])
        if not found:
            return "No alike requests wait for you."
        dm = await self.directory.dm_channel(me.user_id)
        for batch in found:
            token = secrets.token_urlsafe(12)
            ids = batch.ids[:LISTED]
            await api.store.kv_put(NAMESPACE, token, {"user": me.user_id, "ids": ids,
                                                      "titles": [r.title for r in batch.requests[:LISTED]]},
                                   expires_at=utcnow() + KEEP)
            text, blocks = batch_message(batch, token)
            await self.sender.post_request(dm, what=f"batch to {me.user_id}", text=text, blocks=blocks,
                                           metadata={"event_type": "hitl_batch", "event_payload": {"batch": token}})
        return f"{len(found)} batch(es) sent to your DM."

    async def away(self, me: Responder, words: list[str]) -> str:
        api = self.bridge()
        said = parse_away(words, utcnow())
        mention = MENTION.match(said.delegate)
        delegate = f"slack:{mention.group(1)}" if mention else said.delegate.removeprefix("@")
        window = await api.away(me.key, delegate, said.until, starts=said.starts, by=me.key)
        return (f"You are away until {window.until.isoformat()}: {window.delegate} answers for you meanwhile "
                "(`/hitl back` ends it).")

    async def back(self, me: Responder) -> str:
        api = self.bridge()
        person = api.person_acting(me)
        return "Welcome back." if await api.back(person) else "You were not away."

    # batch buttons --------------------------------------------------------------------------------
    async def on_exclude(self, ack: AsyncAck) -> None:
        await ack()  # the picker's state is read when a button is clicked

    async def _batch_of(self, body: dict[str, Any], action: dict[str, Any]) -> dict[str, Any] | None:
        token = str(action.get("value", ""))[:64]
        found = await self.bridge().store.kv_get(NAMESPACE, token, utcnow()) if token else None
        user_id = str((body.get("user") or {}).get("id", ""))
        if found is None or found.get("user") != user_id:
            return None  # expired, forged, or someone else's: nothing is answered
        return found

    async def on_approve(self, ack: AsyncAck, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        user_id = str((body.get("user") or {}).get("id", ""))
        found = await self._batch_of(body, action)
        channel, ts = _where(body)
        if found is None:
            await self._tell(channel, user_id, "This batch has expired or is not yours: run `/hitl batch` again.")
            return
        ids = [str(i) for i in found.get("ids", [])]
        left_out = _excluded(body, len(ids))
        chosen = [i for n, i in enumerate(ids, start=1) if n not in left_out]
        me = Responder(platform="slack", user_id=user_id, name=await self.directory.user_name(user_id))
        results: dict[str, dict[str, Any]] = {}
        if chosen:
            result = await self.bridge().answer_batch(chosen, me, via=VIA, value="yes")
            results = {item.request_id: item.as_json() for item in result.items}
        titles = dict(zip(ids, [str(t) for t in found.get("titles", [])], strict=False))
        text, blocks = results_message(titles, ids, results)
        await self.bridge().store.kv_delete(NAMESPACE, str(action.get("value", "")))
        if channel and ts:
            try:
                await self.sender.update_message(channel, ts, text=text, blocks=blocks)
            except SlackCallFailed as exc:
                log.warning("slack: could not show the results of a batch: %s", exc.error)

    async def on_review(self, ack: AsyncAck, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        user_id = str((body.get("user") or {}).get("id", ""))
        found = await self._batch_of(body, action)
        if found is None:
            await self._tell(_where(body)[0], user_id, "This batch has expired or is not yours.")
            return
        api = self.bridge()
        me = Responder(platform="slack", user_id=user_id)
        for request_id in found.get("ids", []):
            request = await api.get(str(request_id))
            if request is not None and request.is_open and await api.is_allowed(request, me, via=VIA):
                await api.post(request, [f"slack:@{user_id}"])

    async def _tell(self, channel: str, user_id: str, text: str) -> None:
        if channel:
            try:
                await self.sender.ephemeral(channel, user_id, text)
            except SlackCallFailed as exc:
                log.warning("slack: could not tell %s: %s", user_id, exc.error)


def _where(body: dict[str, Any]) -> tuple[str, str]:
    container = body.get("container") or {}
    return str(container.get("channel_id", "")), str(container.get("message_ts", ""))


def _excluded(body: dict[str, Any], count: int) -> set[int]:
    """The item numbers picked in "Leave out" (anything else in the state is ignored)."""
    values = ((body.get("state") or {}).get("values") or {}).get(EXCLUDE_BLOCK) or {}
    picked = (values.get(EXCLUDE_ACTION) or {}).get("selected_options") or []
    out = set()
    for option in picked[:LISTED] if isinstance(picked, list) else []:
        value = str((option or {}).get("value", "")) if isinstance(option, dict) else ""
        if value.isdigit() and 1 <= int(value) <= count:
            out.add(int(value))
    return out
