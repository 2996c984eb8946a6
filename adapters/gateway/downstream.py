"""One downstream MCP server for one agent session: connected on first use with the
official client (`mcp.Client`, stdio or Streamable HTTP), restarted when it exits.

Each agent session has its own connections (and, for a command, its own process), so no
session sees another's downstream state. The connection lives in a task of its own (the
SDK's transports must be closed by the task that opened them) held open until the session
ends. A server that exits is restarted on the spot and reported: a log line, and the
health registry (`gateway:<gateway>/<server>`, read by `/readyz` and `doctor`).

The server's `env` and `headers` go to it and nowhere else; messages name the server,
never its command line, its URL's credentials or its headers.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    Implementation,
)

from adapters.gateway.keepalive import KeepAlive
from adapters.gateway.settings import ServerSettings
from bridge.health import Health

log = logging.getLogger("hitl_bridge.gateway")

START_WITHIN_S = 60.0  # a server's start (npx may fetch, a container may pull) is not a call
CLIENT_INFO = Implementation(name="hitl-bridge-gateway", version="0.1.0")
Elicit = Callable[[ServerSettings, ElicitRequestParams], Awaitable[ElicitResult | ErrorData]]


class DownstreamFailed(Exception):
    """The server could not be reached, exited, or did not answer in time: the message says
    which, fit to show the agent (no command line, no credentials)."""


def _stdio(server: ServerSettings) -> StdioServerParameters:
    assert server.command is not None
    env = {k: v.get_secret_value() for k, v in server.env.items()}
    return StdioServerParameters(command=server.command, args=list(server.args), env=env or None, cwd=server.cwd)


class Downstream:
    """The connection to `server` for one agent session."""

    def __init__(self, gateway: str, server: ServerSettings, tasks: TaskGroup, health: Health,
                 elicit: Elicit) -> None:
        self.gateway = gateway
        self.server = server
        self.component = f"gateway:{gateway}/{server.name}"
        self._tasks = tasks
        self._health = health
        self._elicit = elicit
        self._client: Client | None = None
        self._stop: anyio.Event | None = None
        self._lock = anyio.Lock()
        self.starts = 0
        self.closed = False

    @property
    def timeout_s(self) -> float:
        return self.server.call_timeout.total_seconds()

    async def client(self) -> Client:
        """The connected client, (re)starting the server when there is none."""
        client = self._client
        if client is not None:
            return client
        async with self._lock:
            if self._client is None:
                if self.closed:
                    raise DownstreamFailed(f"the session with server {self.server.name!r} has ended")
                try:
                    with anyio.fail_after(START_WITHIN_S):
                        await self._tasks.start(self._hold)
                except TimeoutError:
                    raise DownstreamFailed(f"server {self.server.name!r} did not start within "
                                           f"{START_WITHIN_S:.0f}s") from None
            assert self._client is not None
            return self._client

    async def _hold(self, *, task_status: TaskStatus[None]) -> None:
        """Open the connection, report it, and keep it open until it breaks or the session ends."""
        stop = anyio.Event()
        self._stop = stop
        started = False
        try:
            async with self._connected() as client:
                self._client = client
                self.starts += 1
                if self.starts > 1:
                    times = f"{self.starts - 1} time{'s' if self.starts > 2 else ''}"
                    log.warning("gateway %s: server %r exited and was restarted (%s)", self.gateway,
                                self.server.name, times)
                    self._health.degraded(self.component, f"exited and was restarted ({times})",
                                          "see the server's own log (its stderr) for why it exits")
                else:
                    self._health.ok(self.component, "connected")
                started = True
                task_status.started()
                await self._watch(client, stop)
        except Exception as exc:
            if started:  # closing a connection that broke: nothing is waiting on it any more
                log.debug("gateway %s: server %r connection closed: %r", self.gateway, self.server.name, exc)
                return
            if not self.closed:
                self._health.degraded(self.component, f"cannot connect: {type(exc).__name__}",
                                      "check the server's command or url in the gateway's config")
            raise DownstreamFailed(f"server {self.server.name!r} could not be started or reached "
                                   f"({type(exc).__name__})") from None
        finally:
            if self._stop is stop:  # not a newer connection's
                self._client = None

    async def _watch(self, client: Client, stop: anyio.Event) -> None:
        """Until the session ends: ping the server while idle; one that exited is restarted
        (and reported) now, not when the next call finds it gone."""
        every = self.server.ping_every.total_seconds()
        while not stop.is_set():
            with anyio.move_on_after(every):
                await stop.wait()
            if stop.is_set():
                return
            try:
                with anyio.fail_after(self.timeout_s), warnings.catch_warnings():
                    # ping left the 2026 protocol; these connections speak the handshake era, which has it
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await client.send_ping()
            except MCPError as exc:
                if exc.code != CONNECTION_CLOSED:
                    continue  # it answered, if oddly: it is there
            except TimeoutError:
                log.warning("gateway %s: server %r did not answer a ping within %.0fs", self.gateway,
                            self.server.name, self.timeout_s)
                continue
            else:
                continue
            self.broken(client)
            self._tasks.start_soon(self._restart)
            return

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[Client]:
        """The connected client; over HTTP, its connection pool is closed with it."""
        server = self.server
        if server.url is None:
            async with Client(_stdio(server), mode="legacy", client_info=CLIENT_INFO,
                              elicitation_callback=self._on_elicit, cache=None) as client:
                yield client
            return
        headers = {k: v.get_secret_value() for k, v in server.headers.items()}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=self.timeout_s),
                                      transport=KeepAlive()) as http, \
                Client(streamable_http_client(server.url, http_client=http), mode="legacy", client_info=CLIENT_INFO,
                       elicitation_callback=self._on_elicit, cache=None) as client:
            yield client

    async def _on_elicit(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        return await self._elicit(self.server, params)

    def broken(self, client: Client) -> None:
        """The connection `client` failed: let it go (the next use restarts the server)."""
        if self._client is client:
            self._client = None
            if self._stop is not None:
                self._stop.set()

    async def call(self, operation: Callable[[Client], Awaitable[Any]]) -> Any:
        """Run `operation` on the connected client; a broken connection restarts the server
        (now, so the next call finds it ready) and raises DownstreamFailed."""
        client = await self.client()
        try:
            with anyio.fail_after(self.timeout_s):
                return await operation(client)
        except TimeoutError:
            raise DownstreamFailed(f"server {self.server.name!r} did not answer within {self.timeout_s:.0f}s"
                                   ) from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self.broken(client)
                await self._restart()
                raise DownstreamFailed(f"server {self.server.name!r} exited during the call; it was restarted, "
                                       "but this call was not completed (it may have had effects): check, then "
                                       "call again") from None
            if exc.code == REQUEST_TIMEOUT:
                raise DownstreamFailed(f"server {self.server.name!r} did not answer within "
                                       f"{self.timeout_s:.0f}s") from None
            raise

    async def call_tool(self, name: str, arguments: dict[str, Any], progress: ProgressFnT) -> CallToolResult:
        """Forward a `tools/call` and return the server's result as it is. It is not checked
        against the tool's output schema here (the SDK client's `call_tool` would, and list
        the tools again when it has not seen one): the agent's client checks it against the
        listing the gateway passed on, and the gateway checks nothing it then passes on."""
        request = CallToolRequest(params=CallToolRequestParams(name=name, arguments=arguments))

        async def send(client: Client) -> CallToolResult:
            return await client.session.send_request(request, CallToolResult, progress_callback=progress,
                                                     request_read_timeout_seconds=self.timeout_s)

        result: CallToolResult = await self.call(send)
        return result

    async def _restart(self) -> None:
        try:
            await self.client()
        except DownstreamFailed as exc:
            log.warning("gateway %s: %s", self.gateway, exc)

    async def aclose(self) -> None:
        self.closed = True
        if self._stop is not None:
            self._stop.set()
