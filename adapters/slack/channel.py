"""The Slack channel (bridge.ports.Channel) on slack-bolt's AsyncApp.

HTTP mode: Bolt checks every request at `/slack/events` with the signing secret (and the
5-minute window) and answers 401 otherwise. Socket Mode (`app_token` set): the same app
behind a websocket opened with `apps.connections.open`; no route is mounted.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.starlette.async_handler import to_async_bolt_request, to_starlette_response
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient
from starlette.requests import Request as HttpRequest
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from adapters.slack.blocks import (
    METADATA_EVENT,
    fallback_text,
    message_metadata,
    request_blocks,
)
from adapters.slack.calls import ChannelPacer, Retrier, SlackCallFailed, response_data, slack_error
from adapters.slack.directory import Directory
from adapters.slack.health import AUTH_ERRORS, SlackHealth
from adapters.slack.home import HomeTab
from adapters.slack.interactions import THREAD_NS, Interactions
from adapters.slack.payloads import payload_problem
from adapters.slack.settings import SlackSettings
from adapters.slack.targets import BadTarget, SlackTarget, parse_target
from adapters.slack.text import slack_date
from bridge.http.body_limit import too_large
from bridge.models import Request, Responder, utcnow
from bridge.ports import BridgeAPI, PostResult

if TYPE_CHECKING:
    from bridge.doctor import Finding
    from bridge.store.base import Store
from bridge.timing_view import timing_notes

log = logging.getLogger("hitl_bridge.slack")
EVENTS_PATH = "/slack/events"
SENDING_NS = "slack.sending"
CHANNEL_IDS_NS = "slack.channel_ids"


class _TokenNoticeFilter(logging.Filter):
    """Bolt warns that $SLACK_BOT_TOKEN is unused when given a client; ours holds that token."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


class CheckedSocketModeHandler(AsyncSocketModeHandler):
    """Bolt's Socket Mode handler, acking (and dropping) payloads of the wrong shape before
    Bolt indexes into them, so Slack does not redeliver them."""

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        problem = payload_problem(req.payload)
        if problem:
            log.warning("slack: malformed Socket Mode payload dropped: %s", problem)
            await client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
            return
        await super().handle(client, req)


class SlackChannel:
    """Posts requests to `slack:` targets and reports clicks, modals and thread replies."""

    name = "slack"
    prefixes = ("slack:",)

    def __init__(self, settings: SlackSettings) -> None:
        self.settings = settings
        self.client = AsyncWebClient(
            token=settings.bot_token.get_secret_value(),
            base_url=settings.api_url,
            timeout=settings.request_timeout_s,  # type: ignore[arg-type]  # aiohttp takes floats
            retry_handlers=[AsyncConnectionErrorRetryHandler(),
                            AsyncRateLimitErrorRetryHandler(max_retry_count=3)],
        )
        self.reporter = SlackHealth()  # channel:slack in the health registry, once started
        self.retrier = Retrier(max_attempts=settings.max_attempts, backoff_s=settings.backoff_s,
                               observer=self.reporter.observe)
        self.pacer = ChannelPacer(settings.post_interval_s)
        self.directory = Directory(self.client, self.retrier, ttl_s=settings.usergroup_cache_s)
        bolt_log = logging.getLogger("hitl_bridge.slack.bolt")
        bolt_log.setLevel(max(bolt_log.getEffectiveLevel(), logging.INFO))  # debug logs hold payloads
        if not any(isinstance(f, _TokenNoticeFilter) for f in bolt_log.filters):
            bolt_log.addFilter(_TokenNoticeFilter())
        self.app = AsyncApp(
            client=self.client,
            signing_secret=settings.signing_secret.get_secret_value() or "socket-mode-unused",
            logger=bolt_log,
            request_verification_enabled=not settings.socket_mode,
        )
        Interactions(self).register(self.app)
        HomeTab(self).register(self.app)
        self._verifier = SignatureVerifier(
            settings.signing_secret.get_secret_value() or "socket-mode-unused")
        self._api: BridgeAPI | None = None
        self._socket: AsyncSocketModeHandler | None = None
        self._socket_task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._channel_ids: dict[str, str] = {}
        # per-request update locks; entries go when no update holds or awaits them
        self._update_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary())

    @property
    def api(self) -> BridgeAPI:
        if self._api is None:
            raise RuntimeError("the Slack channel is not started")
        return self._api

    # lifecycle ---------------------------------------------------------------------------------
    async def start(self, bridge: BridgeAPI) -> None:
        self._api = bridge
        self.reporter.attach(bridge.health)
        self._session = aiohttp.ClientSession()
        self.client.session = self._session
        try:  # a refused token is reported (channel:slack failing, /readyz 503), not fatal
            me = response_data(await self.client.auth_test())
            log.info("slack: connected as %s in %s", me.get("user"), me.get("team"))
            self.reporter.connected(str(me.get("user")), str(me.get("team")))
        except SlackApiError as exc:
            self.reporter.observe(slack_error(exc))
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            self.reporter.unreachable(self.settings.api_url, type(exc).__name__)
        if self.settings.socket_mode:
            self._socket_task = asyncio.create_task(self._connect_socket())

    async def _connect_socket(self) -> None:
        """Open Socket Mode in the background; a refused app token is reported once (the
        SDK would retry it forever), a Slack outage is retried by the SDK."""
        app_token = self.settings.app_token.get_secret_value()
        try:
            await self.client.apps_connections_open(app_token=app_token)
        except SlackApiError as exc:
            if slack_error(exc) in AUTH_ERRORS:
                self.reporter.app_token_refused(slack_error(exc))
                return
        except (aiohttp.ClientError, OSError, TimeoutError):
            pass  # unreachable for now: the SDK's connect keeps trying
        self._socket = CheckedSocketModeHandler(self.app, app_token, web_client=self.client)
        await self._socket.connect_async()

    async def stop(self) -> None:
        if self._socket_task is not None:
            self._socket_task.cancel()
            await asyncio.gather(self._socket_task, return_exceptions=True)
            self._socket_task = None
        if self._socket is not None:
            await self._socket.close_async()
            self._socket = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    # routes --------------------------------------------------------------------------------------
    def http_routes(self) -> Sequence[BaseRoute]:
        if self.settings.socket_mode:
            return []
        return [Route(EVENTS_PATH, self._events, methods=["POST"])]

    async def _events(self, request: HttpRequest) -> Response:
        """Translate for Bolt (which checks the signature); refuse oversized bodies first."""
        limit = self.settings.max_body_bytes
        declared = request.headers.get("content-length", "0")
        if not declared.isdigit() or int(declared) > limit:
            return too_large(limit, "slack.max_body_bytes")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                return too_large(limit, "slack.max_body_bytes")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return PlainTextResponse("body is not UTF-8", status_code=400)
        # Bolt checks the signature too, but only after parsing: junk is refused unparsed.
        if not self._verifier.is_valid_request(text, dict(request.headers)):
            return PlainTextResponse("invalid signature", status_code=401)
        try:
            bolt_request = to_async_bolt_request(request, body)
        except Exception:  # payload not JSON, JSON not an object
            return PlainTextResponse("malformed body", status_code=400)
        problem = payload_problem(bolt_request.body)
        if problem:
            return PlainTextResponse(f"malformed payload: {problem}", status_code=400)
        try:
            return to_starlette_response(await self.app.async_dispatch(bolt_request))
        except Exception as exc:  # a malformed payload must not take the endpoint down
            log.warning("slack: bad request at %s: %s", EVENTS_PATH, type(exc).__name__)
            return PlainTextResponse("bad request", status_code=400)

    # Channel port --------------------------------------------------------------------------------
    async def doctor(self, targets: Sequence[str], responders: Sequence[str], store: Store) -> list[Finding]:
        """`hitl-bridge doctor`: the token, its scopes, and each target, asked of Slack now."""
        from adapters.slack.doctor import diagnose

        return await diagnose(self, targets, responders, store)

    def owns(self, target: str) -> bool:
        return target.startswith("slack:")

    async def is_member(self, entry: str, responder: Responder) -> bool:
        """Called by the core for `slack:` responders entries: a user id or a `@group`."""
        if responder.platform != "slack":
            return False
        try:
            target = parse_target(entry)
        except BadTarget:
            return False
        if target.kind == "user":
            return target.value == responder.user_id
        if target.kind == "usergroup":
            return responder.user_id in await self.directory.group_members(target.value)
        return False

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
        limit = self.settings.group_dm_limit
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
            data = await self.pacer.run(channel, lambda: self._send(request, key, channel))
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
        blocks = request_blocks(request, await self._notes(request))
        text = fallback_text(request)
        response = await self.retrier.call(
            f"chat.postMessage to {target}",
            lambda: self.client.chat_postMessage(
                channel=channel, text=text, blocks=blocks,
                metadata=message_metadata(request, target), unfurl_links=False),
            recover=lambda: self._find_own_post(channel, request.id, target),
        )
        return response_data(response)

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
            history = response_data(await self.client.conversations_history(
                channel=channel_id, limit=50, include_all_metadata=True))
        except (SlackApiError, aiohttp.ClientError, OSError, TimeoutError):
            return None
        for message in history.get("messages", []):
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
        blocks = request_blocks(request, await self._notes(request))
        text = fallback_text(request)

        async def one(channel: str, ts: str) -> None:
            try:
                await self.retrier.call(f"chat.update {channel}", lambda: self.client.chat_update(
                    channel=channel, ts=ts, text=text, blocks=blocks))
            except SlackCallFailed as exc:
                log.warning("slack: could not update %s in %s: %s", request.id, channel, exc.error)

        await asyncio.gather(*(one(str(p.ref["channel"]), str(p.ref["ts"])) for p in posts))

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        posts = [p for p in await self.api.store.list_posts(request.id, "slack")
                 if p.ok and p.target in targets and p.ref.get("ts")]
        due = f" (answer by {slack_date(request.deadline)})" if request.deadline else ""
        text = f":bell: Reminder: this request is still waiting for an answer{due}."

        async def one(channel: str, ts: str) -> None:
            try:
                await self.pacer.run(channel, lambda: self.retrier.call(
                    f"reminder in {channel}", lambda: self.client.chat_postMessage(
                        channel=channel, thread_ts=ts, text=text, reply_broadcast=False)))
            except SlackCallFailed as exc:
                log.warning("slack: reminder for %s failed: %s", request.id, exc.error)

        await asyncio.gather(*(one(str(p.ref["channel"]), str(p.ref["ts"])) for p in posts))
