"""The MCP Tasks extension (`io.modelcontextprotocol/tasks`, protocol 2026-07-28): to a
client that declares it, a call that asks people returns a task at once, and the client
polls `tasks/get` until the task holds the tool's result.

A task *is* the bridge request: the task id is the request id, its state lives in the
bridge's store, so a task outlives the MCP connection, this process and a daemon restart.
`tasks/cancel` cancels the request. Nothing here ever needs input from the client, so
`tasks/update` only acknowledges.
"""

from __future__ import annotations

from typing import Any

from hitl_bridge_client import BridgeError, Conflict, NotFound
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolRequestParams,
    RequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict

from adapters.mcp.calls import TASK_SLOT, Calls, TaskSlot, headers_of
from adapters.mcp.results import OPEN_STATES, failure, result_for

TASKS = "io.modelcontextprotocol/tasks"
POLL_INTERVAL_MS = 1000
#: the tools that wait for people (and so may become tasks)
WAITING_TOOLS = frozenset({"ask_human", "request_approval", "permission_prompt", "await_answer"})


class TaskParams(RequestParams):
    model_config = ConfigDict(extra="allow")  # tasks/update carries inputResponses

    task_id: str


def task_of(view: dict[str, Any]) -> dict[str, Any]:
    """A request as a task (`DetailedTask`): working while open; then completed with the
    tool's result (a timeout or failure included: those are results, not JSON-RPC errors),
    or cancelled."""
    state = str(view.get("state"))
    status = "working" if state in OPEN_STATES else "cancelled" if state == "cancelled" else "completed"
    task: dict[str, Any] = {
        "taskId": str(view.get("id")), "status": status, "createdAt": view.get("created_at"),
        "lastUpdatedAt": view.get("updated_at"), "ttlMs": None, "pollIntervalMs": POLL_INTERVAL_MS,
        "statusMessage": {"working": "waiting for a person to answer",
                          "cancelled": f"cancelled: {view.get('error') or 'no reason given'}",
                          "completed": "answered" if view.get("answer") else f"closed ({state})"}[status],
    }
    if status == "completed":
        task["result"] = result_for(view).model_dump(by_alias=True, mode="json", exclude_none=True)
    return task


def declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return bool(capabilities is not None and capabilities.extensions and TASKS in capabilities.extensions)


class TasksExtension(Extension):
    identifier = TASKS

    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def methods(self) -> list[MethodBinding]:
        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return [MethodBinding("tasks/get", TaskParams, self.get, versions),
                MethodBinding("tasks/cancel", TaskParams, self.cancel, versions),
                MethodBinding("tasks/update", TaskParams, self.update, versions)]

    async def intercept_tool_call(self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any],
                                  call_next: CallNext) -> HandlerResult:
        if params.name not in WAITING_TOOLS or not declares_tasks(ctx):
            return await call_next(ctx)
        slot = TaskSlot()
        token = TASK_SLOT.set(slot)
        try:
            result = await call_next(ctx)
        finally:
            TASK_SLOT.reset(token)
        if slot.request_id is None:
            return result  # refused before anything was asked: the tool's own result
        client = self.calls.link.client(headers_of(ctx.request))
        try:
            view = await self.calls.view(client, slot.request_id)
        except BridgeError as exc:
            return failure(self.calls.explain(exc), params.name)
        return {"resultType": "task", **task_of(view)}

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        return task_of(await self._view(ctx, params.task_id))

    async def cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        await self._view(ctx, params.task_id)
        client = self.calls.link.client(headers_of(ctx.request))
        try:
            await client.cancel(params.task_id, "the MCP client cancelled the task", actor="mcp")
        except Conflict:
            pass  # closed already: cancelling is cooperative
        except BridgeError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=f"Failed to cancel task: {exc}") from None
        return {}

    async def update(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        await self._view(ctx, params.task_id)
        return {}  # these tasks never ask the client for input

    async def _view(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> dict[str, Any]:
        if not declares_tasks(ctx):
            raise MCPError(code=MISSING_REQUIRED_CLIENT_CAPABILITY, message="Missing required client capability",
                           data={"requiredCapabilities": {"extensions": {TASKS: {}}}})
        client = self.calls.link.client(headers_of(ctx.request))
        try:
            return await self.calls.view(client, task_id)
        except NotFound:
            raise MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: no task {task_id[:100]!r}") from None
        except BridgeError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=f"Failed to retrieve task: {exc}") from None
