"""What the Telegram channel remembers, kept in the store's key/value space so a restart
loses nothing: button tokens, prompts waiting for a typed reply, answering sessions,
multi-choice selections, the polling offset. Secret values are never written here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bridge.store.base import Store

TOKENS, PROMPTS, CHATS, SESSIONS, SELECTIONS, EXTRA, POLLING, REASONS = (
    "tg.token", "tg.prompt", "tg.chat", "tg.session", "tg.selection", "tg.extra", "tg.polling", "tg.reason",
)  # fmt: skip
KEEP = timedelta(days=30)  # state of a request nobody answered expires with it (or after this)


@dataclass
class TokenRecord:
    """What a callback token (or deep-link token) stands for.

    purpose: `q` buttons of a one-question request · `start` ▶️ Answer · `private` deep link
    to the private chat · `step` one step of a session · `session` a session's Cancel.
    """

    request_id: str
    purpose: str
    question_id: str = ""
    chat_id: int = 0
    user_id: int = 0
    step: int = -1


@dataclass
class Prompt:
    """A bot message waiting for a typed reply.

    kind: `direct` (the request message of a text/secret/edit question) · `reason`
    (why a Reject) · `step` (a session step). `user_id` 0 means anyone allowed may reply.
    """

    request_id: str
    question_id: str
    kind: str
    secret: bool = False
    user_id: int = 0
    token: str = ""  # reason prompts: the token of the buttons that asked


@dataclass
class PendingReason:
    """A ❌ Reject waiting for its typed reason. `due` (ISO instant, "" for never): when it
    is recorded without one. Every field has a default: entries written before are readable."""

    message_id: int = 0  # the bot's "why reject?" prompt
    chat_id: int = 0
    request_id: str = ""
    question_id: str = ""
    user_id: int = 0
    name: str = ""
    due: str = ""

    @classmethod
    def load(cls, data: dict[str, Any]) -> PendingReason:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class Session:
    """A person answering a request step by step in one chat (forms, several questions).

    `steps` are `[question_id, field_name]` (field "" for a whole question); `values`
    never holds secrets (those stay in memory until the answer is recorded).
    """

    request_id: str
    chat_id: int
    user_id: int
    steps: list[list[str]]
    index: int = 0
    values: dict[str, Any] = field(default_factory=dict)
    token: str = ""  # the current step's buttons
    prompt_id: int = 0  # the current step's message
    selected: list[int] = field(default_factory=list)


class ChannelState:
    """Typed access to the channel's records in `store`'s kv space."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._tokens: dict[str, TokenRecord] = {}  # tokens never change: a read-through cache

    def _remember(self, token: str, record: TokenRecord) -> None:
        if len(self._tokens) >= 10_000:
            self._tokens.clear()
        self._tokens[token] = record

    async def _put(self, ns: str, key: str, value: dict[str, Any], now: datetime) -> None:
        await self.store.kv_put(ns, key, value, expires_at=now + KEEP)

    # tokens -------------------------------------------------------------------------
    async def put_token(self, token: str, record: TokenRecord, now: datetime) -> None:
        await self._put(TOKENS, token, asdict(record), now)
        self._remember(token, record)

    async def token(self, token: str, now: datetime) -> TokenRecord | None:
        cached = self._tokens.get(token)
        if cached is not None:
            return cached
        data = await self.store.kv_get(TOKENS, token, now)
        if not data:
            return None
        record = TokenRecord(**data)
        self._remember(token, record)
        return record

    # prompts (and the open prompts of each chat) --------------------------------------
    async def put_prompt(self, chat_id: int, message_id: int, prompt: Prompt, now: datetime) -> None:
        await self._put(PROMPTS, f"{chat_id}:{message_id}", asdict(prompt), now)
        ids = await self.open_prompt_ids(chat_id, now)
        await self._put(CHATS, str(chat_id), {"prompts": [*ids, message_id][-200:]}, now)

    async def prompt(self, chat_id: int, message_id: int, now: datetime) -> Prompt | None:
        data = await self.store.kv_get(PROMPTS, f"{chat_id}:{message_id}", now)
        return Prompt(**data) if data else None

    async def drop_prompt(self, chat_id: int, message_id: int, now: datetime) -> None:
        await self.store.kv_delete(PROMPTS, f"{chat_id}:{message_id}")
        ids = [i for i in await self.open_prompt_ids(chat_id, now) if i != message_id]
        await self._put(CHATS, str(chat_id), {"prompts": ids}, now)

    async def open_prompt_ids(self, chat_id: int, now: datetime) -> list[int]:
        data = await self.store.kv_get(CHATS, str(chat_id), now)
        return [int(i) for i in data["prompts"]] if data else []

    # sessions -------------------------------------------------------------------------
    async def put_session(self, session: Session, now: datetime) -> None:
        await self._put(SESSIONS, f"{session.chat_id}:{session.user_id}", asdict(session), now)

    async def session(self, chat_id: int, user_id: int, now: datetime) -> Session | None:
        data = await self.store.kv_get(SESSIONS, f"{chat_id}:{user_id}", now)
        return Session(**data) if data else None

    async def drop_session(self, chat_id: int, user_id: int) -> None:
        await self.store.kv_delete(SESSIONS, f"{chat_id}:{user_id}")

    # a Reject waiting for its reason: (token, user) → the prompt message ----------------
    async def put_reason(self, token: str, pending: PendingReason, now: datetime) -> None:
        await self._put(REASONS, f"{token}:{pending.user_id}", asdict(pending), now)

    async def reason(self, token: str, user_id: int, now: datetime) -> PendingReason | None:
        data = await self.store.kv_get(REASONS, f"{token}:{user_id}", now)
        return PendingReason.load(data) if data else None

    async def drop_reason(self, token: str, user_id: int) -> bool:
        """Forget it; True only for the one caller that did (replicas race for it)."""
        return await self.store.kv_delete(REASONS, f"{token}:{user_id}")

    async def due_reasons(self, now: datetime) -> list[tuple[str, PendingReason]]:
        """Pending Rejects whose wait for a reason is over: (token, pending)."""
        due = []
        for key, data in await self.store.kv_items(REASONS, now):
            pending = PendingReason.load(data)
            if pending.due and datetime.fromisoformat(pending.due) <= now:
                due.append((key.rsplit(":", 1)[0], pending))
        return due

    # multi-choice selections on a request message --------------------------------------
    async def selection(self, chat_id: int, message_id: int, now: datetime) -> set[int]:
        data = await self.store.kv_get(SELECTIONS, f"{chat_id}:{message_id}", now)
        return {int(i) for i in data["selected"]} if data else set()

    async def put_selection(self, chat_id: int, message_id: int, selected: set[int], now: datetime) -> None:
        await self._put(SELECTIONS, f"{chat_id}:{message_id}", {"selected": sorted(selected)}, now)

    # messages besides the posts that carry buttons for a request (session steps...) ----
    async def add_extra(self, request_id: str, chat_id: int, message_id: int, now: datetime) -> None:
        data = await self.store.kv_get(EXTRA, request_id, now) or {"messages": []}
        data["messages"] = [*data["messages"], [chat_id, message_id]][-500:]
        await self._put(EXTRA, request_id, data, now)

    async def extras(self, request_id: str, now: datetime) -> list[tuple[int, int]]:
        data = await self.store.kv_get(EXTRA, request_id, now)
        return [(int(c), int(m)) for c, m in data["messages"]] if data else []

    # polling offset ---------------------------------------------------------------------
    async def offset(self) -> int:
        data = await self.store.kv_get(POLLING, "offset")
        return int(data["update_id"]) if data else 0

    async def commit(self, update_id: int) -> None:
        await self.store.kv_put(POLLING, "offset", {"update_id": update_id})
