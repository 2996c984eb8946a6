"""Who is in a group: a `telegram:<negative chat id>` responders entry lets everyone in
that group answer, checked with getChatMember and cached for `member_cache_s` (a refusal
for at most 30 s, so someone just added gets in soon)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from telegram.constants import ChatMemberStatus

from adapters.telegram.sender import SendError

if TYPE_CHECKING:
    from adapters.telegram.sender import TelegramSender
    from bridge.models import Responder

log = logging.getLogger(__name__)
IN_GROUP = frozenset({ChatMemberStatus.OWNER, ChatMemberStatus.ADMINISTRATOR, ChatMemberStatus.MEMBER})
REMEMBERED = 10_000  # (group, user) pairs; all forgotten at once past this


class Membership:
    def __init__(self, sender: TelegramSender, cache_s: float) -> None:
        self.sender = sender
        self.cache_s = cache_s
        self._members: dict[tuple[int, int], tuple[float, bool]] = {}  # (group, user) → (until, inside)

    async def admits(self, entry: str, responder: Responder) -> bool:
        """Whether `entry` (a `telegram:` chat) names `responder`: their own private chat, or
        a group they are in."""
        if responder.platform != "telegram":
            return False
        try:
            chat_id, user_id = int(entry.removeprefix("telegram:")), int(responder.user_id)
        except ValueError:
            return False
        if chat_id >= 0:
            return chat_id == user_id
        now = time.monotonic()
        cached = self._members.get((chat_id, user_id))
        if cached is not None and now < cached[0]:
            return cached[1]
        bot = self.sender.bot
        try:
            member = await self.sender.call("getChatMember", lambda: bot.get_chat_member(chat_id, user_id))
            inside = member.status in IN_GROUP or (member.status == ChatMemberStatus.RESTRICTED
                                                   and bool(getattr(member, "is_member", False)))
        except SendError as exc:
            if not exc.refused:
                raise
            log.info("Telegram: getChatMember(%s, %s): %s", chat_id, user_id, exc.message)  # not in it (any more)
            inside = False
        ttl = self.cache_s if inside else min(self.cache_s, 30.0)
        if len(self._members) >= REMEMBERED:
            self._members.clear()
        self._members[(chat_id, user_id)] = (now + ttl, inside)
        return inside
