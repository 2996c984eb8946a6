"""Receiving: what Slack sends reaches Bolt's `AsyncApp`, whose listeners (interactions.py,
home.py) turn it into answers.

HTTP mode: Bolt checks every request at `/slack/events` with the signing secret (and the
5-minute window) and answers 401 otherwise. Socket Mode (`app_token` set): the same app
behind a websocket opened with `apps.connections.open`; no route is mounted.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.starlette.async_handler import to_async_bolt_request, to_starlette_response
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient
from starlette.requests import Request as HttpRequest
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from adapters.slack.calls import slack_error
from adapters.slack.health import AUTH_ERRORS, SlackHealth
from adapters.slack.payloads import payload_problem
from adapters.slack.settings import SlackSettings
from bridge.http.body_limit import too_large

log = logging.getLogger("hitl_bridge.slack")
EVENTS_PATH = "/slack/events"


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


def bolt_app(settings: SlackSettings, client: AsyncWebClient) -> AsyncApp:
    """The Bolt app the listeners register on; its debug logs (which hold payloads) stay off."""
    bolt_log = logging.getLogger("hitl_bridge.slack.bolt")
    bolt_log.setLevel(max(bolt_log.getEffectiveLevel(), logging.INFO))  # debug logs hold payloads
    if not any(isinstance(f, _TokenNoticeFilter) for f in bolt_log.filters):
        bolt_log.addFilter(_TokenNoticeFilter())
    return AsyncApp(
        client=client,
        signing_secret=settings.signing_secret.get_secret_value() or "socket-mode-unused",
        logger=bolt_log,
        request_verification_enabled=not settings.socket_mode,
    )


class SlackReceiver:
    """Feeds Slack's events and interactions to `app`: the HTTP route, or Socket Mode."""

    def __init__(self, settings: SlackSettings, client: AsyncWebClient, reporter: SlackHealth) -> None:
        self.settings = settings
        self.client = client
        self.reporter = reporter
        self.app = bolt_app(settings, client)
        self._verifier = SignatureVerifier(
            settings.signing_secret.get_secret_value() or "socket-mode-unused")
        self._socket: AsyncSocketModeHandler | None = None
        self._socket_task: asyncio.Task[None] | None = None

    # Socket Mode ---------------------------------------------------------------------------------
    def start(self) -> None:
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

    # HTTP mode -----------------------------------------------------------------------------------
    def http_routes(self) -> list[BaseRoute]:
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
