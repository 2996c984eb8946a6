"""`/mcp/<name>` in the daemon (`sources: [{type: gateway, name: …, servers: […]}]`): the
gateway over Streamable HTTP, behind the bridge's bearer tokens, the Host guard and the
Origin check (`adapters.mcp.source.McpEndpoint`, shared with `/mcp`).

A held call is a request of this source, submitted to the core (`RequestSink.submit`, with
`created_by` the token the agent's session opened with) and awaited on it
(`RequestSink.wait`); the answer is read by the waiting call, so `deliver` has nothing to
do. The SDK's session manager and the downstream connections live in `run()`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import BaseRoute, Route

from adapters.gateway.deciders import CoreDecider
from adapters.gateway.gateway import Gateway
from adapters.gateway.settings import GatewaySettings
from adapters.mcp.source import MAX_SESSIONS, SESSION_IDLE_S, McpEndpoint
from bridge.config import Settings
from bridge.ports import Outcome, RequestSink
from bridge.registry import AdapterContext

log = logging.getLogger("hitl_bridge.gateway")


class GatewaySource:
    def __init__(self, settings: GatewaySettings, bridge_settings: Settings) -> None:
        self.name = settings.name
        self.path = f"/mcp/{settings.name}"
        self.settings = settings
        self.max_body = bridge_settings.http.max_body_bytes
        self.manager: StreamableHTTPSessionManager | None = None
        self.gateway: Gateway | None = None
        self._running = asyncio.Event()
        logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs every session at INFO

    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        self.decider = CoreDecider(sink, self.name)
        self.gateway = Gateway(self.settings, self.decider, sink.health)
        return [Route(self.path, McpEndpoint(self), methods=["GET", "POST", "DELETE"])]

    def bind(self, app: Any) -> None:
        return None  # calls reach the core through the sink, not the app

    async def run(self, sink: RequestSink) -> None:
        """Hold the session manager and the downstream connections until the daemon stops."""
        gateway = self.gateway or Gateway(self.settings, CoreDecider(sink, self.name), sink.health)
        self.gateway = gateway
        gateway.decider.draining = False
        self.manager = StreamableHTTPSessionManager(
            app=gateway.server, json_response=False,
            # the daemon's guard checks Host; McpEndpoint checks Origin and the token
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=self.max_body, session_idle_timeout=SESSION_IDLE_S, max_sessions=MAX_SESSIONS)
        try:
            async with anyio.create_task_group() as tasks, self.manager.run():
                gateway.sessions.tasks = tasks
                self._running.set()
                await asyncio.Event().wait()
        finally:
            self._running.clear()
            gateway.sessions.tasks = None
            gateway.sessions.forget()
            gateway.decider.draining = True  # calls cut short by the stop leave their requests open

    async def close(self) -> None:
        return None

    async def deliver(self, outcome: Outcome) -> None:
        return None  # the held call reads its answer; there is nothing to write back


def build_source(section: dict[str, Any], ctx: AdapterContext) -> GatewaySource:
    settings = ctx.parse(GatewaySettings, section)
    return GatewaySource(settings, ctx.settings)


