"""One tool call that asks people: create the request, hold the call while they answer
(sending progress notifications), and return the answer — or, when the hold ends first, the
request id to wait on with `await_answer`.

A call the MCP client cancels, or whose connection drops, cancels its request: nobody
should approve what nobody waits for. The daemon stopping is not that: the request stays
open in the store for the next start (`BridgeLink.draining`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio
from hitl_bridge_client import AsyncClient, BridgeError, BridgeRefused, Conflict, NotFound, Unauthorized
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult

from adapters.mcp.links import BridgeLink
from adapters.mcp.requests import LABEL_CALL, Caller
from adapters.mcp.results import OPEN_STATES, failure, result_for
from adapters.mcp.settings import McpSettings

log = logging.getLogger("hitl_bridge.mcp")

POLL_S = 60.0  # one long poll of the API (it allows up to 120 s)
CANCEL_WITHIN_S = 5.0
CHECK_WAIT_S = 0.001  # await_answer's first read: a long poll, so the bridge checks the token may wait
WITHDRAWN = "the MCP client stopped waiting (it cancelled the tool call or disconnected)"


@dataclass
class TaskSlot:
    """Set around a call by the tasks extension: the call asks, notes the request id here,
    and returns at once; the client then polls `tasks/get`."""

    request_id: str | None = None


TASK_SLOT: ContextVar[TaskSlot | None] = ContextVar("hitl_bridge_mcp_task_slot", default=None)
ASKED = CallToolResult(content=[])  # what a call in a task slot returns (the extension replaces it)


#: over stdio, one `hitl-bridge mcp` process serves one client session (Claude Code starts one a session)
STDIO_SESSION = f"mcp-stdio-{uuid.uuid4()}"


def session_of(headers: Mapping[str, str] | None) -> str | None:
    """The MCP session a call belongs to: this process over stdio, the `Mcp-Session-Id` over
    HTTP (None without one: stateless HTTP has no session, and "for this session" is not offered)."""
    if headers is None:
        return STDIO_SESSION
    found = headers.get("mcp-session-id")
    return f"mcp-{found[:180]}" if found else None


def headers_of(request: Any) -> Mapping[str, str] | None:
    """The HTTP headers of the MCP request being served (None over stdio)."""
    headers = getattr(request, "headers", None)
    return headers if isinstance(headers, Mapping) else None


class Calls:
    def __init__(self, link: BridgeLink, settings: McpSettings) -> None:
        self.link = link
        self.settings = settings
        self.waiting = 0  # calls holding for an answer (or cancelling their request) right now
        self._idle = asyncio.Event()
        self._idle.set()

    def caller(self, ctx: Context) -> Caller:
        params = ctx.session.client_params
        info = params.client_info if params is not None else None
        return self.settings.caller(info.name if info is not None and info.name else "mcp")

    def client(self, ctx: Context) -> AsyncClient:
        return self.link.client(ctx.headers)

    def hold(self, wait_seconds: float | None) -> float | None:
        """The shorter of the configured hold and the one the call asks for (None: no limit)."""
        holds = [s for s in (self.settings.hold_s, wait_seconds) if s is not None]
        return min(holds) if holds else None

    async def ask(self, ctx: Context, call: str, body: dict[str, Any], hold_s: float | None) -> CallToolResult:
        client = self.client(ctx)
        session = session_of(ctx.headers)
        if session is not None:
            body.setdefault("session", session)  # what "Allow for this session" is scoped to
        try:
            request_id = await client.create(body)
        except BridgeError as exc:
            return failure(self.explain(exc), call)
        slot = TASK_SLOT.get()
        if slot is not None:
            slot.request_id = request_id
            return ASKED
        return await self.wait(ctx, client, request_id, hold_s, call)

    async def await_answer(self, ctx: Context, request_id: str, wait_seconds: float | None) -> CallToolResult:
        client = self.client(ctx)
        try:
            # a (brief) long poll: the bridge lets a token wait only on what it may manage
            view = await self.view(client, request_id, wait=CHECK_WAIT_S)
        except BridgeError as exc:
            return failure(self.explain(exc))
        slot = TASK_SLOT.get()
        if slot is not None:
            slot.request_id = request_id
            return ASKED
        if view.get("state") not in OPEN_STATES:
            return result_for(view)
        return await self.wait(ctx, client, request_id, self.hold(wait_seconds), str(view["labels"][LABEL_CALL]))

    async def view(self, client: AsyncClient, request_id: str, *, wait: float = 0) -> dict[str, Any]:
        """A request asked through MCP (NotFound for any other: its answer is not ours to give)."""
        view = await client.get(request_id, wait=wait)
        if LABEL_CALL not in (view.get("labels") or {}):
            raise NotFound(404, f"no request {request_id!r} asked through MCP")
        return view

    async def wait(self, ctx: Context, client: AsyncClient, request_id: str, hold_s: float | None,
                   call: str) -> CallToolResult:
        self.waiting += 1
        self._idle.clear()
        try:
            view = await self._hold(ctx, client, request_id, hold_s)
        except anyio.get_cancelled_exc_class():
            await self.withdraw(client, request_id, WITHDRAWN)
            raise
        except BridgeError as exc:
            if _forbidden(exc):
                return failure(self.explain(exc), call)
            return failure(f"{self.explain(exc)}. Request {request_id} stays open: call await_answer with "
                           "its id to keep waiting.", call)
        finally:
            self.waiting -= 1
            if not self.waiting:
                self._idle.set()
        return result_for(view)

    async def idle(self) -> None:
        """Return once no call holds (each cancelled call has cancelled its request)."""
        await self._idle.wait()

    async def withdraw(self, client: AsyncClient, request_id: str, reason: str) -> None:
        """Cancel the request nobody waits for any more (not while the daemon stops)."""
        if self.link.draining:
            return
        with anyio.move_on_after(CANCEL_WITHIN_S, shield=True):
            try:
                await client.cancel(request_id, reason, actor="mcp")
            except Conflict:
                pass  # answered or closed meanwhile
            except BridgeError as exc:
                log.warning("could not cancel request %s after its MCP call ended: %s", request_id, exc)

    async def _hold(self, ctx: Context, client: AsyncClient, request_id: str, hold_s: float | None) -> dict[str, Any]:
        start = anyio.current_time()
        deadline = None if hold_s is None else start + hold_s
        failed: BridgeError | None = None
        async with anyio.create_task_group() as heartbeat:
            heartbeat.start_soon(self._progress, ctx, request_id, start)
            try:
                while True:
                    left = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - anyio.current_time()))
                    view = await self.link.wait(client, request_id, left)
                    if view.get("state") not in OPEN_STATES or (
                            deadline is not None and anyio.current_time() >= deadline):
                        break
            except BridgeError as exc:
                failed = exc  # raised outside the task group, which would wrap it in an ExceptionGroup
            finally:
                heartbeat.cancel_scope.cancel()
        if failed is not None:
            raise failed
        return view

    async def _progress(self, ctx: Context, request_id: str, start: float) -> None:
        """Progress notifications while the call holds: clients that reset their timeout on
        progress keep waiting, and people watching the agent see that it waits for someone."""
        every = self.settings.progress_every.total_seconds()
        while True:
            await anyio.sleep(every)
            waited = anyio.current_time() - start
            try:
                await ctx.report_progress(round(waited, 3), None,
                                          f"waiting for a person to answer request {request_id} ({waited:.0f}s)")
            except Exception as exc:  # the client may be gone: the poll finds out
                log.debug("progress notification for %s not sent: %s", request_id, exc)

    def explain(self, exc: BridgeError) -> str:
        if _forbidden(exc):
            return str(exc)  # another token's request: the bridge says whose
        if isinstance(exc, Unauthorized):
            return (f"{exc}. Give `hitl-bridge mcp` one of the bridge's http.api_tokens (--token or "
                    "HITL_BRIDGE_TOKEN), or the MCP client's Authorization header for /mcp")
        return f"{exc} ({self.link.describe()})"


def _forbidden(exc: BridgeError) -> bool:
    """403: the token is right, but the request is not its to wait on or cancel."""
    return isinstance(exc, BridgeRefused) and exc.status == 403
