"""`/mcp` in the daemon (`sources: [{type: mcp}]`): the same MCP server as `hitl-bridge mcp`,
over Streamable HTTP, behind the bridge's bearer tokens.

The daemon runs uvicorn without ASGI lifespan, so the SDK's session manager (its task group)
lives in this source's `run()`; `/mcp` answers 503 until it runs. A session belongs to the
token that opened it. The daemon's guard has checked `Host` before this sees a request;
this also refuses cross-site `Origin`s (the MCP spec asks for it) and wrong tokens (401).
Requests enter through the HTTP intake like any API call (`created_by: api:<token>`),
so a `type: webhook` source must be configured too; a call holding for the answer waits
on the core (`RequestSink.wait`), given to this source with its routes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from adapters.mcp.calls import Calls
from adapters.mcp.links import MountedLink
from adapters.mcp.server import build_server
from adapters.mcp.settings import McpSettings
from bridge.config import Settings
from bridge.http.auth import token_name, token_ok
from bridge.http.guard import cross_site
from bridge.ports import Outcome, RequestSink
from bridge.registry import AdapterContext

log = logging.getLogger("hitl_bridge.mcp")

PATH = "/mcp"
READY_WITHIN_S = 5.0
MAX_SESSIONS = 1000
SESSION_IDLE_S = 30 * 60


class McpSource:
    """Contributes `/mcp`; asks through the HTTP intake, so it never delivers anything itself:
    the waiting tool call reads the answer (the write-back is the tool result)."""

    def __init__(self, settings: McpSettings, bridge_settings: Settings) -> None:
        self.name = settings.name
        self.settings = settings
        self.max_body = bridge_settings.http.max_body_bytes
        self.link = MountedLink()
        self.server = build_server(Calls(self.link, settings))
        self.path = PATH
        self.manager: StreamableHTTPSessionManager | None = None
        self._running = asyncio.Event()
        logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs every session at INFO

    async def run(self, sink: RequestSink) -> None:
        """Hold the session manager's task group open until the daemon stops."""
        self.link.draining = False
        # a new session manager each run (one can run only once); the SDK's way to mount an
        # MCPServer in another app is its `session_manager` after `streamable_http_app()`
        self.server.streamable_http_app(
            streamable_http_path=PATH,
            json_response=False,  # SSE: progress notifications reach the client while a call waits
            # the daemon's guard checks Host; this endpoint checks Origin and the token
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=self.max_body, session_idle_timeout=SESSION_IDLE_S, max_sessions=MAX_SESSIONS)
        self.manager = self.server.session_manager
        async with self.manager.run():
            self._running.set()
            try:
                await asyncio.Event().wait()
            finally:
                self._running.clear()
                self.link.draining = True  # calls cut short by the stop leave their requests open

    def bind(self, app: Any) -> None:
        self.link.bind(app)

    async def close(self) -> None:
        await self.link.aclose()

    async def deliver(self, outcome: Outcome) -> None:
        return None  # never called: requests asked through MCP belong to the webhook source

    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        self.link.sink = sink  # a call holding for an answer waits on the core, not on a long poll
        return [Route(PATH, McpEndpoint(self), methods=["GET", "POST", "DELETE"])]


class Mounted(Protocol):
    """An MCP server the daemon serves over Streamable HTTP (`/mcp`, a gateway's `/mcp/<name>`)."""

    path: str
    manager: StreamableHTTPSessionManager | None
    _running: asyncio.Event

    def bind(self, app: Any) -> None:
        """Called with the daemon's app by each request, before the session manager."""
        ...


class McpEndpoint:
    """The ASGI app at `/mcp` (and each gateway's `/mcp/<name>`): Origin and token checks,
    then the SDK's session manager."""

    def __init__(self, source: Mounted) -> None:
        self.source = source

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        settings: Settings = scope["app"].state.settings
        headers = Headers(scope=scope)
        if cross_site(headers):
            await _refusal(403, f"cross-site requests to {self.source.path} are refused (Origin names another site)")(
                scope, receive, send)
            return
        authorization = headers.get("authorization")
        if not token_ok(settings, authorization):
            await _refusal(401, "missing or wrong bearer token (Authorization: Bearer <one of http.api_tokens>)",
                           {"www-authenticate": "Bearer"})(scope, receive, send)
            return
        try:
            if not self.source._running.is_set():  # not a task and a timer for every request
                await asyncio.wait_for(self.source._running.wait(), READY_WITHIN_S)
        except TimeoutError:
            await _refusal(503, f"the MCP endpoint {self.source.path} is not running (starting, or stopping)",
                           {"retry-after": "1"})(scope, receive, send)
            return
        manager = self.source.manager
        assert manager is not None
        self.source.bind(scope["app"])
        name = token_name(settings, authorization)
        if name is not None:  # a session opened with one token is refused to any other
            scope = {**scope, "user": AuthenticatedUser(AccessToken(token="", client_id=f"api:{name}", scopes=[]))}
        await manager.handle_request(scope, receive, send)


def _refusal(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def build_source(section: dict[str, Any], ctx: AdapterContext) -> McpSource:
    settings = ctx.parse(McpSettings, section)
    if not any(s.get("type") == "webhook" for s in ctx.settings.sources):
        raise ctx.error("type", "an mcp source asks through the HTTP intake: add `- type: webhook` to sources")
    return McpSource(settings, ctx.settings)
