"""A fake Telegram Bot API server on 127.0.0.1, and simulated people who use it.

It answers what the real python-telegram-bot sends (`{base_url}{token}/{method}`, form
encoded, objects JSON-encoded) and checks what the real API checks: the token, text
≤ 4,096 characters after entity parsing, HTML that parses, `callback_data` 1-64 bytes,
ForceReply placeholders ≤ 64, callback answers ≤ 200 characters and answered once, no DM to
someone who never pressed Start, "message is not modified". It records every call,
can inject 429 with `retry_after` and 5xx, and watches the flood limits (30/s overall,
1/s per private chat): violations are recorded, and refused with 429 when `enforce_limits`.

Updates from simulated people go to `getUpdates` (long poll, offsets confirm) or, after
`setWebhook`, are POSTed to the webhook URL with the secret header, like Telegram does.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import httpx
from aiohttp import web

TEXT_LIMIT = 4096
CALLBACK_DATA_LIMIT = 64
HTML_TAGS = {
    "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre",
    "tg-spoiler", "span", "blockquote", "tg-emoji",
}  # fmt: skip
BOOL_PARAMS = {"show_alert", "drop_pending_updates", "disable_notification", "protect_content"}
COUNTED_OVERALL = "chat_id"  # every call that names a chat counts towards 30/s


class EntityError(ValueError):
    """Text with parse_mode HTML that Telegram would refuse ("can't parse entities")."""


class _TelegramHTML(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.text: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in HTML_TAGS:
            raise EntityError(f"can't parse entities: unsupported start tag \"{tag}\"")
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            raise EntityError(f"can't parse entities: unmatched end tag \"{tag}\"")
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if "<" in data or ">" in data:
            raise EntityError("can't parse entities: unescaped < or >")
        self.text.append(data)

    def handle_entityref(self, name: str) -> None:
        known = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
        if name not in known:
            raise EntityError(f"can't parse entities: unsupported entity &{name};")
        self.text.append(known[name])

    def handle_charref(self, name: str) -> None:
        self.text.append(chr(int(name[1:], 16) if name[:1] in "xX" else int(name)))


def visible_text(text: str, parse_mode: str | None) -> str:
    """The text a person sees; raises EntityError for HTML Telegram would refuse."""
    if (parse_mode or "").upper() != "HTML":
        return text
    parser = _TelegramHTML()
    parser.feed(text)
    parser.close()
    if parser.stack:
        raise EntityError(f"can't parse entities: unclosed tag \"{parser.stack[-1]}\"")
    return "".join(parser.text)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass
class ApiCall:
    """One request the bot made: method, decoded parameters, HTTP status returned."""

    method: str
    params: dict[str, Any]
    at: float
    status: int = 200
    body: str = ""  # the raw request body, to search for leaked secrets


@dataclass
class Fault:
    method: str
    status: int
    times: int
    retry_after: int | None = None


@dataclass
class Chat:
    id: int
    type: str  # private | group | supergroup
    title: str = ""
    started: bool = False  # private chats: the person pressed Start
    bot_removed: bool = False  # groups: the bot was removed (getChat and sends are Forbidden)
    members: dict[int, str] = field(default_factory=dict)  # groups: user id → status (member, left…)

    def as_json(self) -> dict[str, Any]:
        if self.type == "private":
            return {"id": self.id, "type": "private", "first_name": f"user{self.id}"}
        return {"id": self.id, "type": self.type, "title": self.title}


ADMIN_RIGHTS = ("can_manage_chat", "can_delete_messages", "can_manage_video_chats", "can_restrict_members",
                "can_promote_members", "can_change_info", "can_invite_users", "can_post_stories",
                "can_edit_stories", "can_delete_stories")
RESTRICTED_RIGHTS = ("can_change_info", "can_invite_users", "can_pin_messages", "can_send_messages",
                     "can_send_polls", "can_send_other_messages", "can_add_web_page_previews",
                     "can_manage_topics", "can_send_audios", "can_send_documents", "can_send_photos",
                     "can_send_videos", "can_send_video_notes", "can_send_voice_notes", "can_edit_tag",
                     "can_react_to_messages")


class ApiError(Exception):
    def __init__(self, status: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.retry_after = retry_after


@dataclass
class FakeTelegram:
    """The fake server. `await start()` → `api_url` (for `telegram.api_url`)."""

    token: str = "123456:TEST-token_for-the-fake"
    bot_id: int = 123456
    bot_username: str = "hitl_test_bot"
    overall_per_second: int = 30
    per_chat_interval: float = 1.0
    enforce_limits: bool = False
    chat_jitter: float = 0.05  # arrival-time allowance when checking per-chat spacing
    overall_jitter: float = 0.02  # ... and when counting calls in a one-second window
    calls: list[ApiCall] = field(default_factory=list)
    chats: dict[int, Chat] = field(default_factory=dict)
    messages: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    deleted: set[tuple[int, int]] = field(default_factory=set)
    callback_answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    commands: list[tuple[str, str]] = field(default_factory=list)  # the bot's menu (setMyCommands)
    violations: list[str] = field(default_factory=list)
    webhook_url: str = ""
    webhook_secret: str = ""
    webhook_statuses: list[int] = field(default_factory=list)
    #: "host:port" the webhook URL's name resolves to (a public name pointing at this machine);
    #: the update still carries the URL's own Host header, as Telegram's would
    webhook_resolves_to: str = ""
    conflicts: int = 0  # getUpdates calls ended by a newer one (two bot instances polling)

    def __post_init__(self) -> None:
        self._updates: list[dict[str, Any]] = []
        self._confirmed = 0  # highest update_id confirmed by an offset
        self._update_ids = itertools.count(1000)
        self._message_ids = itertools.count(1)
        self._callback_ids = itertools.count(1)
        self._faults: list[Fault] = []
        self._changed = asyncio.Condition()
        self._recent: deque[float] = deque()
        self._last_send: dict[int, float] = {}
        self._open_callbacks: set[str] = set()
        self._runner: web.AppRunner | None = None
        self._closing = False
        self._poll_generation = 0
        self._holds: dict[str, asyncio.Event] = {}
        self.delivered_at: dict[int, float] = {}  # update_id → when it first left for the bot
        self._webhook_client: httpx.AsyncClient | None = None
        self.base = ""

    # lifecycle --------------------------------------------------------------------
    async def start(self) -> str:
        app = web.Application(client_max_size=60 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base = f"http://127.0.0.1:{port}"
        return self.api_url

    @property
    def api_url(self) -> str:
        return f"{self.base}/bot"

    async def stop(self) -> None:
        self._closing = True  # long polls still open return at once
        await self._notify()
        if self._webhook_client is not None:
            await self._webhook_client.aclose()
        if self._runner is not None:
            await self._runner.cleanup()

    # setup and fault injection ------------------------------------------------------
    def add_group(self, chat_id: int, title: str = "team", kind: str = "group",
                  members: dict[int, str] | None = None) -> Chat:
        """A group the bot is in; `members`: user id → status (creator, administrator,
        member, restricted, left, kicked) for getChatMember."""
        chat = Chat(chat_id, kind, title, members=dict(members or {}))
        self.chats[chat_id] = chat
        return chat

    def person(self, user_id: int, name: str = "", *, started: bool = True) -> Person:
        """A simulated person; `started` → they pressed Start in the bot's private chat."""
        if started:
            self.chats.setdefault(user_id, Chat(user_id, "private")).started = True
        return Person(self, user_id, name or f"user{user_id}")

    def fail(self, method: str, status: int = 500, *, times: int = 1, retry_after: int | None = None) -> None:
        """The next `times` calls of `method` fail with `status` (429 carries retry_after)."""
        self._faults.append(Fault(method, status, times, retry_after))

    def hold(self, method: str) -> asyncio.Event:
        """Calls of `method` wait (unanswered) until the returned event is set."""
        gate = asyncio.Event()
        self._holds[method] = gate
        return gate

    # queries for tests ------------------------------------------------------------
    def calls_of(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method and c.status == 200]

    def sent_to(self, chat_id: int) -> list[dict[str, Any]]:
        """Messages the bot sent to `chat_id`, in their current (edited) form, oldest first;
        `text` is what people see (HTML parsed, as the real API returns it)."""
        return [
            m for (cid, _), m in sorted(self.messages.items())
            if cid == chat_id and m["from"]["id"] == self.bot_id
        ]  # fmt: skip

    def message(self, chat_id: int, message_id: int) -> dict[str, Any]:
        return self.messages[(chat_id, message_id)]

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Wait until `predicate()` is truthy (re-checked on every API call); return it."""
        deadline = time.monotonic() + timeout
        async with self._changed:
            while True:
                result = predicate()
                if result:
                    return result
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"condition not met within {timeout}s")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(left, 0.05))

    async def wait_for_call(self, method: str, predicate: Callable[[ApiCall], bool] = lambda c: True,
                            *, after: int = 0, timeout: float = 5.0) -> ApiCall:
        """The first successful `method` call (from index `after`) matching `predicate`."""
        def find() -> ApiCall | None:
            return next((c for c in self.calls[after:] if c.method == method
                         and c.status == 200 and predicate(c)), None)
        result: ApiCall = await self.wait_for(find, timeout)
        return result

    # updates ------------------------------------------------------------------------
    async def push(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Deliver one update: to the webhook when set, else queue it for getUpdates."""
        update = {"update_id": next(self._update_ids), **payload}
        if self.webhook_url:
            if self._webhook_client is None:  # one keep-alive client, as Telegram keeps its connections
                self._webhook_client = httpx.AsyncClient(timeout=10)
            headers = {"X-Telegram-Bot-Api-Secret-Token": self.webhook_secret} if self.webhook_secret else {}
            self.delivered_at.setdefault(update["update_id"], time.monotonic())
            url = self.webhook_url
            if self.webhook_resolves_to:
                public = httpx.URL(url)
                headers["Host"] = public.netloc.decode()
                url = str(public.copy_with(scheme="http", netloc=self.webhook_resolves_to.encode()))
            resp = await self._webhook_client.post(url, json=update, headers=headers)
            self.webhook_statuses.append(resp.status_code)
        else:
            async with self._changed:
                self._updates.append(update)
                self._changed.notify_all()
        return update

    @property
    def pending_updates(self) -> list[dict[str, Any]]:
        """Updates not yet confirmed by a getUpdates offset."""
        return [u for u in self._updates if u["update_id"] > self._confirmed]

    # the HTTP handler -----------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        raw = await request.read()
        params = await _decode(request, raw)
        call = ApiCall(method, params, time.monotonic(), body=raw.decode("utf-8", "replace"))
        self.calls.append(call)
        gate = self._holds.get(method)
        if gate is not None and not gate.is_set():
            await gate.wait()
            if request.transport is None or request.transport.is_closing():
                call.status = 499  # the bot went away while held: the call never happened
                return web.Response(status=499)
        try:
            if request.match_info["token"] != self.token:
                raise ApiError(401, "Unauthorized")
            self._inject_fault(method)
            self._check_limits(method, params)
            handler = getattr(self, f"_m_{method}", None)
            if handler is None:
                raise ApiError(404, "Not Found")
            if method == "getUpdates":
                result = await self._m_getUpdates(params)
            else:
                result = handler(params)
        except ApiError as exc:
            call.status = exc.status
            body: dict[str, Any] = {"ok": False, "error_code": exc.status, "description": exc.description}
            if exc.retry_after is not None:
                body["parameters"] = {"retry_after": exc.retry_after}
            await self._notify()
            return web.json_response(body, status=exc.status)
        await self._notify()
        return web.json_response({"ok": True, "result": result})

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _inject_fault(self, method: str) -> None:
        for fault in self._faults:
            if fault.method == method and fault.times > 0:
                fault.times -= 1
                if fault.status == 429:
                    raise ApiError(429, f"Too Many Requests: retry after {fault.retry_after}",
                                   fault.retry_after or 1)
                raise ApiError(fault.status, "Internal Server Error")

    def _check_limits(self, method: str, params: dict[str, Any]) -> None:
        if COUNTED_OVERALL not in params:
            return
        now = time.monotonic()
        while self._recent and now - self._recent[0] >= 1.0 - self.overall_jitter:
            self._recent.popleft()
        problem = ""
        if len(self._recent) >= self.overall_per_second:
            problem = f"more than {self.overall_per_second} calls in one second ({method})"
        chat_id = _int(params.get("chat_id"))
        if method.startswith("send") and chat_id > 0:
            last = self._last_send.get(chat_id)
            if last is not None and now - last < self.per_chat_interval - self.chat_jitter:
                problem = f"two messages to chat {chat_id} {now - last:.3f}s apart"
        if problem:
            self.violations.append(problem)
            if self.enforce_limits:
                raise ApiError(429, "Too Many Requests: retry after 1", 1)
        self._recent.append(now)
        if method.startswith("send") and chat_id > 0:
            self._last_send[chat_id] = now

    # methods ----------------------------------------------------------------------------
    def _bot_user(self) -> dict[str, Any]:
        return {"id": self.bot_id, "is_bot": True, "first_name": "HITL", "username": self.bot_username}

    def _m_getMe(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**self._bot_user(), "can_join_groups": True, "can_read_all_group_messages": False,
                "supports_inline_queries": False}

    def _m_logOut(self, params: dict[str, Any]) -> bool:
        return True

    def _m_close(self, params: dict[str, Any]) -> bool:
        return True

    def _m_deleteWebhook(self, params: dict[str, Any]) -> bool:
        self.webhook_url = ""
        self.webhook_secret = ""
        if params.get("drop_pending_updates"):
            self._updates.clear()
        return True

    def _m_setWebhook(self, params: dict[str, Any]) -> bool:
        url = str(params.get("url", ""))
        secret = str(params.get("secret_token", ""))
        if not url.startswith(("http://", "https://")):
            raise ApiError(400, "Bad Request: bad webhook: invalid URL")
        if secret and (len(secret) > 256 or not all(c.isalnum() or c in "_-" for c in secret)):
            raise ApiError(400, "Bad Request: secret token contains unallowed characters")
        self.webhook_url, self.webhook_secret = url, secret
        return True

    def _m_getWebhookInfo(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"url": self.webhook_url, "has_custom_certificate": False,
                "pending_update_count": len(self.pending_updates)}

    async def _m_getUpdates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        if self.webhook_url:
            raise ApiError(409, "Conflict: can't use getUpdates method while webhook is active")
        offset = _int(params.get("offset"))
        if offset:
            self._confirmed = max(self._confirmed, offset - 1)
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        limit = _int(params.get("limit")) or 100
        deadline = time.monotonic() + float(params.get("timeout") or 0)
        self._poll_generation += 1
        mine = self._poll_generation
        async with self._changed:
            self._changed.notify_all()  # an older long poll still waiting ends, as on Telegram
            while True:
                if self._poll_generation != mine:
                    self.conflicts += 1
                    raise ApiError(409, "Conflict: terminated by other getUpdates request; "
                                        "make sure that only one bot instance is running")
                ready = [u for u in self._updates if u["update_id"] > self._confirmed][:limit]
                left = deadline - time.monotonic()
                if ready or left <= 0 or self._closing:
                    now = time.monotonic()
                    for update in ready:
                        self.delivered_at.setdefault(update["update_id"], now)
                    return ready
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(left, 0.5))

    def _chat_for_sending(self, params: dict[str, Any]) -> Chat:
        chat = self.chats.get(_int(params.get("chat_id")))
        if chat is None:
            if _int(params.get("chat_id")) > 0:
                raise ApiError(403, "Forbidden: bot can't initiate conversation with a user")
            raise ApiError(400, "Bad Request: chat not found")
        if chat.type == "private" and not chat.started:
            raise ApiError(403, "Forbidden: bot can't initiate conversation with a user")
        if chat.bot_removed:
            raise ApiError(403, f"Forbidden: bot was kicked from the {chat.type} chat")
        return chat

    def _m_sendMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        chat = self._chat_for_sending(params)
        text = _check_text(str(params.get("text", "")), params.get("parse_mode"))
        markup = params.get("reply_markup")
        _check_markup(markup)
        message: dict[str, Any] = {
            "message_id": next(self._message_ids), "date": int(time.time()),
            "chat": chat.as_json(), "from": self._bot_user(), "text": text,
            "parse_mode": params.get("parse_mode"),
        }
        if isinstance(markup, dict) and "inline_keyboard" in markup:
            message["reply_markup"] = markup
        if isinstance(markup, dict) and markup.get("force_reply"):
            message["force_reply"] = markup
        reply_to = _int(params.get("reply_to_message_id")) or _int(
            (params.get("reply_parameters") or {}).get("message_id"))
        if reply_to:
            message["reply_to_message_id"] = reply_to
        self.messages[(chat.id, message["message_id"])] = message
        return _public(message)

    def _edited(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (_int(params.get("chat_id")), _int(params.get("message_id")))
        message = self.messages.get(key)
        if message is None or key in self.deleted:
            raise ApiError(400, "Bad Request: message to edit not found")
        if message["from"]["id"] != self.bot_id:
            raise ApiError(400, "Bad Request: message can't be edited")
        return message

    def _m_editMessageText(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._edited(params)
        text = _check_text(str(params.get("text", "")), params.get("parse_mode"))
        markup = params.get("reply_markup")
        _check_markup(markup)
        if text == message["text"] and markup == message.get("reply_markup"):
            raise ApiError(400, "Bad Request: message is not modified: specified new message content "
                                "and reply markup are exactly the same as a current content and reply "
                                "markup of the message")
        message["text"], message["parse_mode"] = text, params.get("parse_mode")
        message.pop("reply_markup", None)
        if isinstance(markup, dict) and "inline_keyboard" in markup:
            message["reply_markup"] = markup
        message["edit_date"] = int(time.time())
        return _public(message)

    def _m_editMessageReplyMarkup(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._edited(params)
        markup = params.get("reply_markup")
        _check_markup(markup)
        if markup == message.get("reply_markup"):
            raise ApiError(400, "Bad Request: message is not modified")
        message.pop("reply_markup", None)
        if isinstance(markup, dict) and "inline_keyboard" in markup:
            message["reply_markup"] = markup
        return _public(message)

    def _m_deleteMessage(self, params: dict[str, Any]) -> bool:
        key = (_int(params.get("chat_id")), _int(params.get("message_id")))
        if key not in self.messages or key in self.deleted:
            raise ApiError(400, "Bad Request: message to delete not found")
        chat = self.chats.get(key[0])
        mine = self.messages[key]["from"]["id"] == self.bot_id
        if not mine and (chat is None or chat.type != "private"):
            raise ApiError(400, "Bad Request: message can't be deleted")
        self.deleted.add(key)
        return True

    def _m_answerCallbackQuery(self, params: dict[str, Any]) -> bool:
        query_id = str(params.get("callback_query_id", ""))
        if query_id not in self._open_callbacks:
            raise ApiError(400, "Bad Request: query is too old and response timeout expired or "
                                "query ID is invalid")
        if len(str(params.get("text", ""))) > 200:
            raise ApiError(400, "Bad Request: MESSAGE_TOO_LONG")
        self._open_callbacks.discard(query_id)
        self.callback_answers[query_id] = params
        return True

    def _m_setMyCommands(self, params: dict[str, Any]) -> bool:
        """Telegram's rules: 1-100 commands of 1-32 lowercase letters, digits and _, each with
        a description of 1-256 characters."""
        commands = params.get("commands")
        if not isinstance(commands, list) or not 1 <= len(commands) <= 100:
            raise ApiError(400, "Bad Request: commands must be a non-empty list")
        for entry in commands:
            name, about = str(entry.get("command", "")), str(entry.get("description", ""))
            if not re.fullmatch(r"[a-z0-9_]{1,32}", name) or not 1 <= len(about) <= 256:
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
        self.commands = [(str(c["command"]), str(c["description"])) for c in commands]
        return True

    def _m_getChat(self, params: dict[str, Any]) -> dict[str, Any]:
        chat = self.chats.get(_int(params.get("chat_id")))
        if chat is None:
            raise ApiError(400, "Bad Request: chat not found")
        if chat.bot_removed:
            raise ApiError(403, f"Forbidden: bot was kicked from the {chat.type} chat")
        return {**chat.as_json(), "accent_color_id": 0, "max_reaction_count": 11}

    def _m_getChatMember(self, params: dict[str, Any]) -> dict[str, Any]:
        chat = self.chats.get(_int(params.get("chat_id")))
        if chat is None:
            raise ApiError(400, "Bad Request: chat not found")
        user_id = _int(params.get("user_id"))
        status = chat.members.get(user_id)
        if status is None:
            raise ApiError(400, "Bad Request: user not found")  # what Telegram says for a stranger
        user = {"id": user_id, "is_bot": False, "first_name": f"user{user_id}"}
        member: dict[str, Any] = {"status": status, "user": user}
        if status == "creator":
            member["is_anonymous"] = False
        elif status == "administrator":
            member.update(dict.fromkeys(ADMIN_RIGHTS, False), can_be_edited=False, is_anonymous=False)
        elif status == "restricted":
            member.update(dict.fromkeys(RESTRICTED_RIGHTS, False), is_member=True, until_date=0)
        elif status == "kicked":
            member["until_date"] = 0
        return member

    # used by Person -------------------------------------------------------------------------
    def _store_user_message(self, message: dict[str, Any]) -> None:
        self.messages[(message["chat"]["id"], message["message_id"])] = message

    def _new_callback_id(self) -> str:
        query_id = f"cbq{next(self._callback_ids)}"
        self._open_callbacks.add(query_id)
        return query_id


class Person:
    """A simulated person: produces exactly the updates Telegram sends for what they do."""

    def __init__(self, fake: FakeTelegram, user_id: int, name: str) -> None:
        self.fake = fake
        self.id = user_id
        self.name = name

    @property
    def user(self) -> dict[str, Any]:
        return {"id": self.id, "is_bot": False, "first_name": self.name, "username": self.name.lower()}

    def _chat(self, chat_id: int | None) -> dict[str, Any]:
        chat = self.fake.chats.get(chat_id if chat_id is not None else self.id)
        if chat is None:
            chat = Chat(self.id, "private")
            self.fake.chats[self.id] = chat
        return chat.as_json()

    async def say(self, text: str, *, chat_id: int | None = None,
                  reply_to: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a message (a reply when `reply_to` is one of the bot's messages)."""
        message: dict[str, Any] = {
            "message_id": next(self.fake._message_ids), "date": int(time.time()),
            "chat": self._chat(chat_id if chat_id is not None else
                               (reply_to["chat"]["id"] if reply_to else None)),
            "from": self.user, "text": text,
        }
        if text.startswith("/"):
            command = text.split()[0]
            message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(command)}]
        if reply_to is not None:
            message["reply_to_message"] = _public(reply_to)
        self.fake._store_user_message(message)
        return await self.fake.push({"message": message})

    async def reply(self, to: dict[str, Any], text: str) -> dict[str, Any]:
        return await self.say(text, reply_to=to)

    async def start(self, payload: str = "") -> dict[str, Any]:
        """Press Start in the private chat (a deep link `t.me/<bot>?start=<payload>`)."""
        self.fake.chats.setdefault(self.id, Chat(self.id, "private")).started = True
        return await self.say(f"/start {payload}".strip(), chat_id=self.id)

    async def edit(self, sent: dict[str, Any], text: str) -> dict[str, Any]:
        """Edit a message they sent earlier (arrives as `edited_message`)."""
        message = dict(sent["message"])
        message["text"], message["edit_date"] = text, int(time.time())
        return await self.fake.push({"edited_message": message})

    async def press(self, message: dict[str, Any], button_text: str) -> dict[str, Any]:
        """Press the inline button whose label contains `button_text` on a bot message."""
        current = self.fake.messages[(message["chat"]["id"], message["message_id"])]
        for row in current.get("reply_markup", {}).get("inline_keyboard", []):
            for button in row:
                if button_text in button["text"] and "callback_data" in button:
                    return await self.press_raw(current, button["callback_data"])
        raise LookupError(f"no button {button_text!r} on message {message['message_id']}")

    async def press_raw(self, message: dict[str, Any], data: str) -> dict[str, Any]:
        """Send any callback_data for a message, as a modified client could (forgery)."""
        current = self.fake.messages.get((message["chat"]["id"], message["message_id"]), message)
        query = {"id": self.fake._new_callback_id(), "from": self.user, "message": _public(current),
                 "chat_instance": f"ci{current['chat']['id']}", "data": data}
        return await self.fake.push({"callback_query": query})

    def buttons(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        current = self.fake.messages[(message["chat"]["id"], message["message_id"])]
        return [b for row in current.get("reply_markup", {}).get("inline_keyboard", []) for b in row]


def _public(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the Bot API returns it (without the fake's bookkeeping)."""
    return {k: v for k, v in message.items() if k not in ("parse_mode", "force_reply")}


async def _decode(request: web.Request, raw: bytes) -> dict[str, Any]:
    """Form fields (urlencoded or multipart) or a JSON body; JSON-encoded objects decoded."""
    fields: dict[str, Any] = {}
    ctype = request.content_type
    if ctype == "application/json" and raw:
        with contextlib.suppress(ValueError):
            fields = dict(json.loads(raw))
    elif ctype in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await request.post()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
    else:
        fields = dict(request.query)
    for key, value in list(fields.items()):
        if key in BOOL_PARAMS and value in ("true", "false"):
            fields[key] = value == "true"
        elif isinstance(value, str) and value[:1] in "{[":
            with contextlib.suppress(ValueError):
                fields[key] = json.loads(value)
    return fields


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _check_text(text: str, parse_mode: Any) -> str:
    """The text as people see it (what the API returns); refuses what Telegram refuses."""
    try:
        shown = visible_text(text, parse_mode)
    except EntityError as exc:
        raise ApiError(400, f"Bad Request: {exc}") from None
    if not shown.strip():
        raise ApiError(400, "Bad Request: message text is empty")
    if utf16_len(shown) > TEXT_LIMIT:
        raise ApiError(400, "Bad Request: message is too long")
    return shown


def _check_markup(markup: Any) -> None:
    if markup is None:
        return
    if not isinstance(markup, dict):
        raise ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object")
    if "force_reply" in markup:
        if len(str(markup.get("input_field_placeholder", ""))) > 64:
            raise ApiError(400, "Bad Request: INPUT_PLACEHOLDER_INVALID")
        return
    rows = markup.get("inline_keyboard")
    if not isinstance(rows, list):
        raise ApiError(400, "Bad Request: can't parse inline keyboard button")
    if sum(len(r) for r in rows) > 100:
        raise ApiError(400, "Bad Request: BUTTONS_TOO_MUCH")
    for row in rows:
        if len(row) > 8:
            raise ApiError(400, "Bad Request: BUTTONS_TOO_MUCH")
        for button in row:
            if not str(button.get("text", "")).strip():
                raise ApiError(400, "Bad Request: BUTTON_TEXT_INVALID")
            data = button.get("callback_data")
            if data is not None and not 1 <= len(str(data).encode()) <= CALLBACK_DATA_LIMIT:
                raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
            if data is None and not button.get("url"):
                raise ApiError(400, "Bad Request: can't parse inline keyboard button")
