"""A request's copies in Slack: posted to each target (a user group's members each get a
DM), re-rendered when the request changes, reminded in their threads.

Rendering is blocks.py's (pure); every call to Slack goes through the `SlackSender`. The
store keeps what survives a restart: which thread belongs to which request, a "sending"
mark per copy (so a repost adopts a post that landed before a crash), `#name` → id.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from adapters.slack.blocks import METADATA_EVENT, fallback_text, message_metadata, reminder_text, request_blocks
from adapters.slack.calls import SlackCallFailed
from adapters.slack.directory import Directory
from adapters.slack.sender import SlackSender
from adapters.slack.targets import BadTarget, SlackTarget, parse_target
from bridge.models import Request, utcnow
from bridge.policy import GrantOffer
from bridge.ports import BridgeAPI, PostResult
from bridge.timing_view import timing_notes

log = logging.getLogger("hitl_bridge.slack")
THREAD_NS = "slack.thread"
SENDING_NS = "slack.sending"
CHANNEL_IDS_NS = "slack.channel_ids"


class Copies:
    """Posts, updates and reminds the Slack copies of requests."""

    def __init__(self, bridge: Callable[[], BridgeAPI], sender: SlackSender, directory: Directory, *,
                 group_dm_limit: int) -> None:
        self._bridge = bridge
        self.sender = sender
        self.directory = directory
        self.group_dm_limit = group_dm_limit
        self._channel_ids: dict[str, str] = {}
        # per-request update locks; entries go when no update holds or awaits them
        self._update_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary())

    @property
    def api(self) -> BridgeAPI:
        return self._bridge()

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        # Each target queues on its channel's pacer before anything awaits, so requests
        # posted one after another reach one channel in that order.
        copies = await asyncio.gather(*(self._post_target(request, t) for t in targets))
        return [result for results in copies for result in results]

    async def _notes(self, request: Request) -> list[str]:
        """The timing notes (votes, escalations) an open request's copies show."""
        return await timing_notes(self.api, request) if request.is_open else []

    async def _post_target(self, request: Request, target: str) -> list[PostResult]:
        try:
            where = parse_target(target)
        except BadTarget as exc:
            return [PostResult(target=target, ok=False, error=str(exc))]
        if where.kind != "usergroup":
            return [await self._post_one(request, target, where, key=target)]
        return await self._post_group(request, target, where.value)

    async def _post_group(self, request: Request, target: str, handle: str) -> list[PostResult]:
        """A user group cannot be posted to: each member gets the request as a DM (every
        copy recorded under the group's target, so updates and reminders reach them all)."""
        try:
            members = sorted(await self.directory.group_members(handle))
        except SlackCallFailed as exc:
            return [PostResult(target=target, ok=False, error=f"cannot list the members of @{handle}: {exc}")]
        if not members:
            return [PostResult(target=target, ok=False, error=(
                f"user group @{handle} does not exist or has no members (Slack cannot post to a group: "
                "its members get DMs)"))]
        limit = self.group_dm_limit
        if len(members) > limit:
            return [PostResult(target=target, ok=False, error=(
                f"user group @{handle} has {len(members)} members, more than slack.group_dm_limit ({limit}) "
                "DMs: name a channel instead, or raise the limit"))]
        results = await asyncio.gather(*(
            self._post_one(request, target, SlackTarget("user", member), key=f"{target}>{member}")
            for member in members))
        return [r if r.ok else PostResult(target=target, ok=False, error=f"DM to {member}: {r.error}")
                for member, r in zip(members, results, strict=True)]

    async def _post_one(self, request: Request, target: str, where: SlackTarget, *, key: str) -> PostResult:
        """One copy at `where`; `key` names the copy in the message metadata (a group
        member's DM: `slack:@group>U…`) so a retry after a crash adopts it, never repeats it."""
        try:
            channel = where.value if where.kind == "channel" \
                else await self.directory.dm_channel(where.value)
            data = await self.sender.paced(channel, lambda: self._send(request, key, channel))
        except SlackCallFailed as exc:
            return PostResult(target=target, ok=False, error=str(exc))
        ref = {"channel": str(data["channel"]), "ts": str(data["ts"])}
        await self._learn_channel_id(channel, ref["channel"])
        await self.api.store.kv_put(THREAD_NS, f"{ref['channel']}:{ref['ts']}",
                                    {"request_id": request.id},
                                    expires_at=utcnow() + timedelta(days=30))
        return PostResult(target=target, ref=ref)

    async def _send(self, request: Request, target: str, channel: str) -> dict[str, Any]:
        # A durable "sending" mark: if the daemon dies inside chat.postMessage, the repost
        # after restart finds the mark and first looks for the message (by its metadata).
        mark = f"{request.id}:{target}"
        if await self.api.store.kv_get(SENDING_NS, mark) is not None:
            adopted = await self._find_own_post(channel, request.id, target)
            if adopted is not None:
                return adopted
        await self.api.store.kv_put(SENDING_NS, mark, {"channel": channel},
                                    expires_at=utcnow() + timedelta(days=2))
        # an escalation post shows the votes and levels so far, like the updated copies
        return await self.sender.post_request(
            channel, what=f"chat.postMessage to {target}", text=fallback_text(request),
            blocks=request_blocks(request, await self._notes(request), self._offers(request)),
            metadata=message_metadata(request, target),
            recover=lambda: self._find_own_post(channel, request.id, target))

    def _offers(self, request: Request) -> list[GrantOffer]:
        """The standing approvals shown next to Approve while the request is open."""
        return self.api.grant_offers(request) if request.is_open else []

    async def _channel_id(self, channel: str) -> str | None:
        """The id of a `#name` channel we posted to before (history takes ids only)."""
        if not channel.startswith("#"):
            return channel
        if channel not in self._channel_ids:
            known = await self.api.store.kv_get(CHANNEL_IDS_NS, channel)
            if known is None:
                return None
            self._channel_ids[channel] = str(known["id"])
        return self._channel_ids[channel]

    async def _learn_channel_id(self, channel: str, channel_id: str) -> None:
        if channel.startswith("#") and self._channel_ids.get(channel) != channel_id:
            self._channel_ids[channel] = channel_id
            await self.api.store.kv_put(CHANNEL_IDS_NS, channel, {"id": channel_id})

    async def _find_own_post(self, channel: str, request_id: str, target: str
                             ) -> dict[str, Any] | None:
        """After an ambiguous failure: did the post land anyway? (metadata names it)"""
        channel_id = await self._channel_id(channel)
        if channel_id is None:
            return None
        try:
            messages = await self.sender.recent_messages(channel_id)
        except SlackCallFailed:
            return None
        for message in messages:
            meta = message.get("metadata") or {}
            payload = meta.get("event_payload") or {}
            if meta.get("event_type") == METADATA_EVENT and payload.get("request_id") == request_id \
                    and payload.get("target") == target:
                log.info("adopting the post of %s to %s found in history", request_id, target)
                return {"channel": channel_id, "ts": message["ts"]}
        return None

    async def update(self, request: Request) -> None:
        """Re-render every copy from the stored request. Updates of one request run one at
        a time and read the store inside the lock, so a late vote update can never put
        the buttons back on an answered message."""
        lock = self._update_locks.get(request.id)
        if lock is None:
            lock = self._update_locks[request.id] = asyncio.Lock()
        async with lock:
            request = await self.api.get(request.id) or request
            await self._update_copies(request)

    async def _update_copies(self, request: Request) -> None:
        posts = [p for p in await self.api.store.list_posts(request.id, "slack")
                 if p.ok and p.ref.get("channel") and p.ref.get("ts")]
        blocks = request_blocks(request, await self._notes(request), self._offers(request))
        text = fallback_text(request)

        async def one(channel: str, ts: str) -> None:
            try:
                await self.sender.update_message(channel, ts, text=text, blocks=blocks)
            except SlackCallFailed as exc:
                log.warning("slack: could not update %s in %s: %s", request.id, channel, exc.error)

        await asyncio.gather(*(one(str(p.ref["channel"]), str(p.ref["ts"])) for p in posts))

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        posts = [p for p in await self.api.store.list_posts(request.id, "slack")
                 if p.ok and p.target in targets and p.ref.get("ts")]
        text = reminder_text(request)

        async def one(channel: str, ts: str) -> None:
            try:
                await self.sender.reply_in_thread(channel, ts, text, what=f"reminder in {channel}")
            except SlackCallFailed as exc:
                log.warning("slack: reminder for %s failed: %s", request.id, exc.error)

        await asyncio.gather(*(one(str(p.ref["channel"]), str(p.ref["ts"])) for p in posts))
