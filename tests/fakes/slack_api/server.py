"""A fake Slack Web API (and Socket Mode websocket) on 127.0.0.1 for tests and benchmarks.

It checks what Slack checks — bearer tokens, the token's scopes (each method's scope, and
`x-oauth-scopes` on every answer, as Slack sends them), channel membership (`not_in_channel`
unless `chat:write.public`), JSON bodies, Block Kit limits, `trigger_id` expiry and reuse,
a per-channel posting rate — records every call, and can inject 429
(with `Retry-After`), 5xx and slow replies. Point `AsyncWebClient(base_url=fake.api_url)`
at it. `send_socket_envelope` pushes a payload over the Socket Mode websocket and returns
the client's acknowledgement.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

from tests.fakes.slack_api.blockkit import check_home_view, check_message, check_view

JSON_METHODS = {"chat.postMessage", "chat.update", "chat.postEphemeral", "views.open", "views.publish"}
#: the bot scope each method needs (Slack's method pages); methods not named need none
METHOD_SCOPES = {
    "chat.postMessage": "chat:write", "chat.update": "chat:write", "chat.postEphemeral": "chat:write",
    "conversations.open": "im:write", "conversations.history": "channels:history",
    "conversations.info": "channels:read", "conversations.list": "channels:read",
    "users.info": "users:read", "usergroups.list": "usergroups:read", "usergroups.users.list": "usergroups:read",
}
ALL_SCOPES = frozenset(METHOD_SCOPES.values())
TRIGGER_TTL_S = 3.0


@dataclass
class Call:
    """One recorded API call."""

    method: str
    args: dict[str, Any]
    token: str | None
    content_type: str
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)


@dataclass
class Injection:
    method: str
    status: int
    retry_after: int | None
    remaining: int
    error: str | None = None


class FakeSlack:
    """The fake server. Use `async with FakeSlack() as fake:`; state is inspectable."""

    def __init__(
        self,
        *,
        bot_token: str = "xoxb-test-token",
        app_token: str = "xapp-test-token",
        channels: dict[str, str] | None = None,
        users: dict[str, str] | None = None,
        usergroups: dict[str, tuple[str, list[str]]] | None = None,
        post_interval_s: float | None = None,
        scopes: frozenset[str] | set[str] = ALL_SCOPES,
    ) -> None:
        self.bot_token = bot_token
        self.scopes: set[str] = set(scopes)  # granted to the bot token (x-oauth-scopes)
        self.outside: set[str] = set()  # channel ids the bot is not a member of
        self.private: set[str] = set()  # private channel ids (invisible to a bot outside them)
        self.archived: set[str] = set()
        self.app_token = app_token
        self.channels: dict[str, str] = channels or {"deploys": "C0DEPLOYS", "incidents": "C0INCIDENTS"}
        self.users: dict[str, str] = users or {"U0ALICE": "alice", "U0BOB": "bob", "U0MALLORY": "mallory"}
        # usergroup id -> (handle, member ids)
        self.usergroups: dict[str, tuple[str, list[str]]] = usergroups or {
            "S0ONCALL": ("oncall-group", ["U0ALICE"]),
        }
        self.post_interval_s = post_interval_s  # per-channel chat.postMessage limit, None: off
        self.calls: list[Call] = []
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}  # (channel, ts) -> message
        self.ephemerals: list[dict[str, Any]] = []
        self.views: dict[str, dict[str, Any]] = {}
        self.homes: dict[str, dict[str, Any]] = {}  # user id → their published Home tab
        self.triggers: dict[str, tuple[float, bool]] = {}  # trigger_id -> (issued, used)
        self.delays: dict[str, float] = {}
        self._injections: list[Injection] = []
        self._last_post: dict[str, float] = {}
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._sockets: list[web.WebSocketResponse] = []
        self._acks: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.socket_connected = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # lifecycle ----------------------------------------------------------------------------
    async def start(self) -> FakeSlack:
        app = web.Application(client_max_size=2 * 1024 * 1024)
        app.router.add_route("*", "/api/{method}", self._handle)
        app.router.add_get("/socket", self._socket)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server: Any = site._server
        self.port = int(server.sockets[0].getsockname()[1])
        return self

    async def stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeSlack:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    # test controls ------------------------------------------------------------------------
    def inject(
        self,
        method: str,
        status: int,
        *,
        retry_after: int | None = None,
        times: int = 1,
        error: str | None = None,
    ) -> None:
        """The next `times` calls of `method` fail with `status` (429 carries Retry-After);
        with status 200 and `error`, they return `{"ok": false, "error": error}`."""
        self._injections.append(Injection(method, status, retry_after, times, error))

    def new_trigger_id(self) -> str:
        """A trigger_id as Slack puts in an interaction payload: usable once, for 3 s."""
        trigger = f"{next(self._ids)}.{secrets.token_hex(6)}"
        self.triggers[trigger] = (time.monotonic(), False)
        return trigger

    def age_trigger(self, trigger_id: str, seconds: float) -> None:
        issued, used = self.triggers[trigger_id]
        self.triggers[trigger_id] = (issued - seconds, used)

    def calls_of(self, method: str, *, ok: bool | None = None) -> list[Call]:
        return [
            c for c in self.calls
            if c.method == method and (ok is None or c.response.get("ok") is ok)
        ]

    def channel_messages(self, channel: str) -> list[dict[str, Any]]:
        """Top-level messages of a channel in posting order."""
        found = [m for (ch, _), m in self.messages.items() if ch == channel and "thread_ts" not in m]
        return sorted(found, key=lambda m: float(m["ts"]))

    def resolve_channel(self, name_or_id: str) -> str | None:
        if name_or_id.startswith("#"):
            return self.channels.get(name_or_id[1:])
        if name_or_id in self.channels.values() or name_or_id.startswith(("D", "C", "G")):
            return name_or_id
        return self.channels.get(name_or_id)

    async def send_socket_envelope(
        self, kind: str, payload: dict[str, Any], *, wait_s: float = 5.0
    ) -> dict[str, Any]:
        """Push an envelope (`interactive`, `events_api`) to the connected Socket Mode client
        and wait for its ack (`{"envelope_id", "payload"?}`)."""
        await asyncio.wait_for(self.socket_connected.wait(), wait_s)
        envelope_id = secrets.token_hex(8)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = future
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind == "interactive",
            "retry_attempt": 0,
            "retry_reason": "",
        }
        await self._sockets[-1].send_str(json.dumps(envelope))
        return await asyncio.wait_for(future, wait_s)

    # HTTP -----------------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        auth = request.headers.get("Authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else None
        ctype = request.content_type
        raw = await request.read()
        call = Call(method, {}, token, ctype)
        self.calls.append(call)
        try:
            args = self._parse_body(ctype, raw, request)
        except ValueError as exc:
            return self._reply(call, {"ok": False, "error": "invalid_json", "detail": str(exc)})
        call.args = args
        if method in self.delays:
            await asyncio.sleep(self.delays[method])
        injected = self._take_injection(method)
        if injected is not None:
            if injected.status != 200:
                headers = {}
                if injected.retry_after is not None:
                    headers["Retry-After"] = str(injected.retry_after)
                body = {"ok": False, "error": "ratelimited" if injected.status == 429 else "fatal_error"}
                return self._reply(call, body, status=injected.status, headers=headers)
            return self._reply(call, {"ok": False, "error": injected.error or "fatal_error"})
        expected = self.app_token if method == "apps.connections.open" else self.bot_token
        if token is None:
            return self._reply(call, {"ok": False, "error": "not_authed"})
        if not secrets.compare_digest(token, expected):
            return self._reply(call, {"ok": False, "error": "invalid_auth"})
        scope_headers = {} if method == "apps.connections.open" else {
            "x-oauth-scopes": ",".join(sorted(self.scopes)),
            "x-accepted-oauth-scopes": METHOD_SCOPES.get(method, "")}
        needed = METHOD_SCOPES.get(method)
        if needed is not None and needed not in self.scopes:
            return self._reply(call, {"ok": False, "error": "missing_scope", "needed": needed,
                                      "provided": ",".join(sorted(self.scopes))}, headers=scope_headers)
        if method in JSON_METHODS and ctype != "application/json":
            return self._reply(call, {"ok": False, "error": "invalid_arguments",
                                      "detail": f"{method} expects a JSON body"})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return self._reply(call, {"ok": False, "error": "unknown_method"})
        result = handler(args)
        if isinstance(result, tuple):
            body, status, headers = result
            return self._reply(call, body, status=status, headers={**scope_headers, **headers})
        return self._reply(call, result, headers=scope_headers)

    def _parse_body(self, ctype: str, raw: bytes, request: web.Request) -> dict[str, Any]:
        args: dict[str, Any] = dict(request.query)
        if not raw:
            return args
        if ctype == "application/json":
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("body must be a JSON object")
            args.update(data)
        else:
            for key, value in parse_qsl(raw.decode(), keep_blank_values=True):
                args[key] = value
            for key in ("blocks", "view", "metadata"):
                if isinstance(args.get(key), str):
                    args[key] = json.loads(args[key])
        return args

    def _take_injection(self, method: str) -> Injection | None:
        for inj in self._injections:
            if inj.method == method and inj.remaining > 0:
                inj.remaining -= 1
                return inj
        return None

    def _reply(
        self, call: Call, body: dict[str, Any], *, status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> web.Response:
        call.status = status
        call.response = body
        return web.json_response(body, status=status, headers=headers)

    # methods --------------------------------------------------------------------------------
    def _m_auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": "https://fake.slack.com/", "team": "Fake", "user": "bridge",
                "team_id": "T0FAKE", "user_id": "U0BRIDGE", "bot_id": "B0BRIDGE"}

    def _m_chat_postMessage(self, args: dict[str, Any]) -> Any:
        channel = self.resolve_channel(str(args.get("channel", "")))
        if not channel or (channel in self.private and channel in self.outside):
            return {"ok": False, "error": "channel_not_found"}
        if channel in self.archived:
            return {"ok": False, "error": "is_archived"}
        if channel in self.outside and ("chat:write.public" not in self.scopes or channel in self.private):
            return {"ok": False, "error": "not_in_channel"}
        problem = check_message(args)
        if problem:
            return {"ok": False, "error": "invalid_blocks", "errors": [problem]}
        if self.post_interval_s is not None and "thread_ts" not in args:
            now = time.monotonic()
            last = self._last_post.get(channel)
            if last is not None and now - last < self.post_interval_s:
                wait = self.post_interval_s - (now - last)
                return ({"ok": False, "error": "ratelimited"}, 429, {"Retry-After": str(int(wait))})
            self._last_post[channel] = now
        ts = f"{1_700_000_000 + next(self._ts)}.000100"
        message = {"type": "message", "ts": ts, "channel": channel, "user": "U0BRIDGE",
                   "bot_id": "B0BRIDGE", "text": args.get("text", ""),
                   "blocks": args.get("blocks", [])}
        if args.get("metadata"):
            message["metadata"] = args["metadata"]
        if args.get("thread_ts"):
            message["thread_ts"] = args["thread_ts"]
        self.messages[(channel, ts)] = message
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _m_chat_update(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.resolve_channel(str(args.get("channel", ""))) or ""
        key = (channel, str(args.get("ts", "")))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        problem = check_message(args)
        if problem:
            return {"ok": False, "error": "invalid_blocks", "errors": [problem]}
        message = self.messages[key]
        message["text"] = args.get("text", message["text"])
        message["blocks"] = args.get("blocks", [])
        message["edited"] = {"user": "U0BRIDGE", "ts": str(time.time())}
        return {"ok": True, "channel": channel, "ts": key[1], "text": message["text"]}

    def _m_chat_postEphemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.resolve_channel(str(args.get("channel", "")))
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if args.get("user") not in self.users:
            return {"ok": False, "error": "user_not_in_channel"}
        self.ephemerals.append({"channel": channel, "user": args["user"],
                                "text": args.get("text", ""), "blocks": args.get("blocks")})
        return {"ok": True, "message_ts": f"{time.time():.6f}"}

    def _m_views_open(self, args: dict[str, Any]) -> dict[str, Any]:
        trigger = str(args.get("trigger_id", ""))
        if trigger not in self.triggers:
            return {"ok": False, "error": "invalid_trigger_id"}
        issued, used = self.triggers[trigger]
        if used:
            return {"ok": False, "error": "exchanged_trigger_id"}
        if time.monotonic() - issued > TRIGGER_TTL_S:
            return {"ok": False, "error": "expired_trigger_id"}
        view = args.get("view")
        problem = check_view(view)
        if problem:
            return invalid_arguments(problem)
        assert isinstance(view, dict)
        self.triggers[trigger] = (issued, True)
        view_id = f"V{next(self._ids):08d}"
        stored = dict(view, id=view_id, state={"values": {}})
        self.views[view_id] = stored
        return {"ok": True, "view": stored}

    def _m_views_publish(self, args: dict[str, Any]) -> dict[str, Any]:
        user = str(args.get("user_id", ""))
        if user not in self.users:
            return {"ok": False, "error": "user_not_found"}
        view = args.get("view")
        problem = check_home_view(view)
        if problem:
            return invalid_arguments(problem)
        assert isinstance(view, dict)
        stored = dict(view, id=f"V{next(self._ids):08d}")
        self.homes[user] = stored
        return {"ok": True, "view": stored}

    def _m_conversations_open(self, args: dict[str, Any]) -> dict[str, Any]:
        users = str(args.get("users", ""))
        if users not in self.users:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "channel": {"id": "D" + users[1:]}}

    def _m_conversations_history(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(args.get("channel", ""))  # an id: Slack does not take #names here
        if channel.startswith("#") or not self.resolve_channel(channel):
            return {"ok": False, "error": "channel_not_found"}
        found = list(reversed(self.channel_messages(channel)))[: int(args.get("limit", 100))]
        with_meta = str(args.get("include_all_metadata", "")).lower() in ("1", "true")
        messages = [{k: v for k, v in m.items() if k != "channel" and (with_meta or k != "metadata")}
                    for m in found]
        return {"ok": True, "messages": messages, "has_more": False}

    def _channel_info(self, name: str, channel_id: str) -> dict[str, Any]:
        return {"id": channel_id, "name": name, "is_channel": True, "is_private": channel_id in self.private,
                "is_archived": channel_id in self.archived, "is_member": channel_id not in self.outside}

    def _visible(self) -> list[tuple[str, str]]:
        """(name, id) of the channels the bot can see: public ones, and private ones it is in."""
        return [(n, c) for n, c in self.channels.items() if not (c in self.private and c in self.outside)]

    def _m_conversations_info(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(args.get("channel", ""))  # an id: Slack does not take #names here
        found = next(((n, c) for n, c in self._visible() if c == channel), None)
        if found is None:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": self._channel_info(*found)}

    def _m_conversations_list(self, args: dict[str, Any]) -> dict[str, Any]:
        """Paged by `cursor` (an offset here) and `limit`, like Slack."""
        visible = sorted(self._visible())
        if str(args.get("exclude_archived", "")).lower() in ("1", "true"):
            visible = [(n, c) for n, c in visible if c not in self.archived]
        start = int(args.get("cursor") or 0)
        limit = max(1, min(int(args.get("limit") or 100), 1000))
        page = visible[start:start + limit]
        more = start + limit < len(visible)
        return {"ok": True, "channels": [self._channel_info(n, c) for n, c in page],
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _m_users_info(self, args: dict[str, Any]) -> dict[str, Any]:
        user = str(args.get("user", ""))
        if user not in self.users:
            return {"ok": False, "error": "user_not_found"}
        name = self.users[user]
        return {"ok": True, "user": {"id": user, "name": name, "real_name": name.title(),
                                     "profile": {"display_name": name}}}

    def _m_usergroups_list(self, args: dict[str, Any]) -> dict[str, Any]:
        groups = [{"id": gid, "handle": handle, "name": handle}
                  for gid, (handle, _) in self.usergroups.items()]
        return {"ok": True, "usergroups": groups}

    def _m_usergroups_users_list(self, args: dict[str, Any]) -> dict[str, Any]:
        group = str(args.get("usergroup", ""))
        if group not in self.usergroups:
            return {"ok": False, "error": "no_such_subteam"}
        return {"ok": True, "users": list(self.usergroups[group][1])}

    def _m_apps_connections_open(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket?ticket={secrets.token_hex(8)}"}

    # Socket Mode ------------------------------------------------------------------------------
    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": len(self._sockets),
                                      "connection_info": {"app_id": "A0FAKE"}}))
        self.socket_connected.set()
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                try:
                    data = json.loads(msg.data)
                except ValueError:
                    continue
                future = self._acks.pop(str(data.get("envelope_id", "")), None)
                if future is not None and not future.done():
                    future.set_result(data)
        finally:
            self._sockets.remove(ws)
            if not self._sockets:
                self.socket_connected.clear()
        return ws


def invalid_arguments(problem: str) -> dict[str, Any]:
    """Slack's answer to a view it refuses, with the reason where Slack puts it."""
    return {"ok": False, "error": "invalid_arguments", "response_metadata": {"messages": [problem]}}
