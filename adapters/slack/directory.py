"""Who is who in the workspace: DM channels of people, members of `@usergroup` handles.

Both are cached: DM channel ids for good (they do not change), group members for
`ttl_s` so a change in Slack takes effect within minutes without a call per click.
"""

from __future__ import annotations

import asyncio
import time

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.calls import Retrier, SlackCallFailed, response_data


class Directory:
    def __init__(self, client: AsyncWebClient, retrier: Retrier, *, ttl_s: float) -> None:
        self.client = client
        self.retrier = retrier
        self.ttl_s = ttl_s
        self._dms: dict[str, str] = {}
        self._names: dict[str, str] = {}
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}
        self._lock = asyncio.Lock()

    async def dm_channel(self, user_id: str) -> str:
        """The id of the bot's DM with `user_id` (opened with conversations.open)."""
        if user_id not in self._dms:
            response = await self.retrier.call(
                "conversations.open", lambda: self.client.conversations_open(users=user_id))
            self._dms[user_id] = str(response_data(response)["channel"]["id"])
        return self._dms[user_id]

    async def user_name(self, user_id: str) -> str:
        """A person's handle (users.info, cached); the id itself when Slack cannot say."""
        if user_id not in self._names:
            try:
                user = response_data(await self.retrier.call(
                    "users.info", lambda: self.client.users_info(user=user_id))).get("user", {})
            except SlackCallFailed:
                return user_id
            self._names[user_id] = str(user.get("name") or user_id)[:100]
        return self._names[user_id]

    async def group_members(self, handle: str) -> frozenset[str]:
        """User ids in the user group with `handle` (empty when there is no such group)."""
        cached = self._groups.get(handle)
        if cached is not None and time.monotonic() - cached[0] < self.ttl_s:
            return cached[1]
        async with self._lock:  # one refresh at a time, however many clicks arrive
            cached = self._groups.get(handle)
            if cached is not None and time.monotonic() - cached[0] < self.ttl_s:
                return cached[1]
            groups = response_data(await self.retrier.call(
                "usergroups.list", lambda: self.client.usergroups_list()))
            group_id = next((g["id"] for g in groups.get("usergroups", [])
                             if str(g.get("handle", "")).lower() == handle), None)
            members: frozenset[str] = frozenset()
            if group_id is not None:
                users = response_data(await self.retrier.call(
                    "usergroups.users.list",
                    lambda: self.client.usergroups_users_list(usergroup=group_id)))
                members = frozenset(str(u) for u in users.get("users", []))
            self._groups[handle] = (time.monotonic(), members)
            return members
