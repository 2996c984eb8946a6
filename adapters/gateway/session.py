"""One agent session behind the gateway: its own downstream connections, the catalog it was
last shown, and the calls it has in flight (so an elicitation a server sends mid-call goes
back to the agent who made that call, or to people for them).

A session is the agent's MCP connection: the SDK's `Connection`, whose exit stack closes
this session's downstream connections when the agent goes away.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp_types import (
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ListPromptsResult,
    ListToolsResult,
    Prompt,
    Tool,
)

from adapters.gateway.catalog import Catalog, merge
from adapters.gateway.downstream import Downstream
from adapters.gateway.settings import GatewaySettings, ServerSettings
from bridge.health import Health


class SessionElicit(Protocol):
    """Answers a server's `elicitation/create` for the agent session it came through."""

    def __call__(self, session: AgentSession, server: ServerSettings,
                 params: ElicitRequestParams) -> Awaitable[ElicitResult | ErrorData]: ...


@dataclass
class AgentSession:
    """What the gateway keeps for one agent connection."""

    id: str
    agent: str
    downstreams: dict[str, Downstream]
    tools: Catalog[Tool] | None = None
    prompts: Catalog[Prompt] | None = None
    #: server name → the agent's calls to it now in flight (the newest last)
    in_flight: dict[str, list[ServerRequestContext[Any, Any]]] = field(default_factory=dict)
    _lock: anyio.Lock = field(default_factory=anyio.Lock)

    def calling(self, server: str, ctx: ServerRequestContext[Any, Any]) -> _InFlight:
        return _InFlight(self.in_flight.setdefault(server, []), ctx)

    def caller_of(self, server: str) -> ServerRequestContext[Any, Any] | None:
        """The agent's newest call in flight to `server` (whose elicitation it is)."""
        calls = self.in_flight.get(server)
        return calls[-1] if calls else None

    async def tool_catalog(self, refresh: bool = False) -> Catalog[Tool]:
        async with self._lock:
            if self.tools is None or refresh:
                listings = []
                for downstream in self.downstreams.values():
                    listings.append((downstream.server, await _all_tools(downstream)))
                self.tools = merge(listings)
            return self.tools

    async def prompt_catalog(self) -> Catalog[Prompt]:
        listings = []
        for downstream in self.downstreams.values():
            client = await downstream.client()
            if client.server_capabilities.prompts is None:
                continue
            listings.append((downstream.server, await _all_prompts(downstream)))
        self.prompts = merge(listings)
        return self.prompts

    async def aclose(self) -> None:
        for downstream in self.downstreams.values():
            await downstream.aclose()


MAX_PAGES = 100  # a server whose listing never ends is cut there


async def _tools_page(client: Client, cursor: str | None) -> ListToolsResult:
    return await client.list_tools(cursor=cursor)


async def _prompts_page(client: Client, cursor: str | None) -> ListPromptsResult:
    return await client.list_prompts(cursor=cursor)


async def _all_tools(downstream: Downstream) -> list[Tool]:
    """Every page of the server's tool listing."""
    found: list[Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page: ListToolsResult = await downstream.call(functools.partial(_tools_page, cursor=cursor))
        found.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return found


async def _all_prompts(downstream: Downstream) -> list[Prompt]:
    found: list[Prompt] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page: ListPromptsResult = await downstream.call(functools.partial(_prompts_page, cursor=cursor))
        found.extend(page.prompts)
        cursor = page.next_cursor
        if not cursor:
            break
    return found


class _InFlight:
    def __init__(self, calls: list[ServerRequestContext[Any, Any]], ctx: ServerRequestContext[Any, Any]) -> None:
        self.calls = calls
        self.ctx = ctx

    def __enter__(self) -> None:
        self.calls.append(self.ctx)

    def __exit__(self, *exc: object) -> None:
        self.calls.remove(self.ctx)


class Sessions:
    """The agent sessions of one gateway. A session is the agent's MCP session when its
    transport has one (Streamable HTTP's `Mcp-Session-Id`; closed with it); a client that
    speaks the sessionless protocol is one session per caller (its token; over stdio, the
    one agent), kept until the gateway stops."""

    def __init__(self, settings: GatewaySettings, health: Health, elicit: SessionElicit) -> None:
        self.settings = settings
        self.health = health
        self.elicit = elicit
        self.tasks: TaskGroup | None = None  # where downstream connections live (set by the transport)
        self._by_key: dict[str, AgentSession] = {}

    def of(self, ctx: ServerRequestContext[Any, Any], caller: str | None) -> AgentSession:
        """The agent session `ctx` belongs to, made on its first request."""
        if self.tasks is None:
            raise RuntimeError("the gateway is not running")
        connection = ctx.session._connection  # the SDK's per-connection state and exit stack
        key = f"session:{connection.session_id}" if connection.session_id else f"caller:{caller or 'local'}"
        found = self._by_key.get(key)
        if found is not None:
            return found
        params = ctx.session.client_params
        info = params.client_info if params is not None else None
        agent = info.name if info is not None and info.name else "mcp"
        session = AgentSession(connection.session_id or f"gateway-{uuid.uuid4()}", agent[:500], {})
        for server in self.settings.servers:
            session.downstreams[server.name] = Downstream(self.settings.name, server, self.tasks, self.health,
                                                          functools.partial(self.elicit, session))
        self._by_key[key] = session
        if connection.session_id:
            connection.exit_stack.push_async_callback(self.end, key)
        return session

    async def end(self, key: str) -> None:
        session = self._by_key.pop(key, None)
        if session is not None:
            await session.aclose()

    def forget(self) -> None:
        """The transport stopped (its task group, and so every connection, is gone): a next
        run starts every session afresh."""
        for session in self._by_key.values():
            for downstream in session.downstreams.values():
                downstream.closed = True
        self._by_key.clear()
