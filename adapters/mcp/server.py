"""The MCP server (official `mcp` SDK): four tools that ask people through the bridge.

- `ask_human`: questions of any kind but `secret` → the answer values, who, through which channel;
- `request_approval`: a tool call and why → approved (possibly with edited arguments) or rejected;
- `permission_prompt`: Claude Code's `--permission-prompt-tool` contract;
- `await_answer`: keep waiting on a request a call returned while still open.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from adapters.mcp.calls import Calls
from adapters.mcp.requests import (
    ASK_HUMAN,
    PERMISSION_PROMPT,
    REQUEST_APPROVAL,
    Refused,
    approval_body,
    ask_body,
)
from adapters.mcp.results import failure
from adapters.mcp.tasks import TasksExtension
from bridge.questions import ID_PATTERN, Question

VERSION = "0.1.0"
INSTRUCTIONS = (
    "Ask people (in Slack, Telegram, email or a web inbox) when you need a decision, a fact, or "
    "permission: ask_human for questions, request_approval before a risky action. Calls wait until "
    "someone answers; if a call returns a pending request_id, call await_answer with it (never ask "
    "again). Never ask for passwords or keys through these tools.")

Timeout = Annotated[float | None, Field(gt=0, le=366 * 86400, description=(
    "Give up after this many seconds; what happens then (no answer, or a default answer) is the "
    "bridge's route setting `on_timeout`. Default: the route's timeout."))]
Wait = Annotated[float | None, Field(gt=0, le=366 * 86400, description=(
    "Hold this call at most this long, then return the still-open request's id for await_answer "
    "(for clients that give up on long calls). Default: until answered."))]
Labels = Annotated[dict[str, str] | None, Field(description=(
    "Labels for routing (e.g. {\"env\": \"prod\"}); the operator's configured labels win."))]


def build_server(calls: Calls, name: str = "hitl-bridge") -> MCPServer:
    server: MCPServer = MCPServer(name, version=VERSION, instructions=INSTRUCTIONS, log_level="WARNING",
                                  extensions=[TasksExtension(calls)])
    waits = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                            open_world_hint=True)

    @server.tool(name=ASK_HUMAN, annotations=waits, description=(
        "Ask people a question and wait for their answer. Each question has a kind: confirm "
        "(yes/no), choice or multi_choice (with options), text, form (fields), edit (a JSON "
        "object to review; put it in `default`). A `secret` question is refused: secrets never "
        "travel through MCP. Returns the answer values by question id, who answered and "
        "through which channel (slack, telegram, web, email, api, or timeout)."))
    async def ask_human(
        ctx: Context,
        title: Annotated[str, Field(min_length=1, max_length=500, description="What you ask, in one line.")],
        questions: Annotated[list[Question] | None, Field(max_length=50, description=(
            "The questions, each with a unique id. None: one free-text answer to the title."))] = None,
        context: Annotated[dict[str, Any] | None, Field(description=(
            "Facts the person needs to answer, shown with the question."))] = None,
        timeout_seconds: Timeout = None,
        labels: Labels = None,
        wait_seconds: Wait = None,
    ) -> CallToolResult:
        asked = [q.model_dump(mode="json") for q in questions or []]
        try:
            body = ask_body(calls.caller(ctx), title, asked, context=context, timeout_s=timeout_seconds,
                            labels=labels)
        except Refused as exc:
            return failure(str(exc))
        return await calls.ask(ctx, ASK_HUMAN, body, calls.hold(wait_seconds))

    @server.tool(name=REQUEST_APPROVAL, annotations=waits, description=(
        "Ask a person to approve a tool call before you make it, and wait. Returns approved "
        "true with the arguments to use (a person may have edited them: use the returned "
        "ones), or approved false with the reason. Nobody answering in time means not approved."))
    async def request_approval(
        ctx: Context,
        tool_name: Annotated[str, Field(min_length=1, max_length=200, description="The tool you want to call.")],
        arguments: Annotated[dict[str, Any] | None, Field(description="The arguments you would call it with.")] = None,
        reason: Annotated[str, Field(max_length=5000, description="Why you want to make this call.")] = "",
        timeout_seconds: Timeout = None,
        labels: Labels = None,
        wait_seconds: Wait = None,
    ) -> CallToolResult:
        body = approval_body(calls.caller(ctx), REQUEST_APPROVAL, tool_name, arguments or {}, why=reason,
                             timeout_s=timeout_seconds, labels=labels)
        return await calls.ask(ctx, REQUEST_APPROVAL, body, calls.hold(wait_seconds))

    @server.tool(name=PERMISSION_PROMPT, annotations=waits, description=(
        "Claude Code's --permission-prompt-tool: asks a person whether Claude may use `tool_name` "
        "with `input`. Returns the text {\"behavior\": \"allow\", \"updatedInput\": {...}} or "
        "{\"behavior\": \"deny\", \"message\": \"...\"}."))
    async def permission_prompt(
        ctx: Context,
        tool_name: Annotated[str, Field(min_length=1, max_length=200, description="The tool Claude wants to use.")],
        input: Annotated[dict[str, Any], Field(description="The input Claude would use it with.")],
        tool_use_id: Annotated[str | None, Field(max_length=190, description="Claude's id of this tool use.")] = None,
    ) -> CallToolResult:
        body = approval_body(calls.caller(ctx), PERMISSION_PROMPT, tool_name, input, tool_use_id=tool_use_id)
        return await calls.ask(ctx, PERMISSION_PROMPT, body, None)  # must end in allow or deny: no handle

    @server.tool(name="await_answer", annotations=waits, description=(
        "Keep waiting for the answer to a request that an earlier call returned while it was still "
        "open (pending: true). Returns what that call would have returned."))
    async def await_answer(
        ctx: Context,
        request_id: Annotated[str, Field(pattern=ID_PATTERN, description="The request_id the earlier call returned.")],
        wait_seconds: Wait = None,
    ) -> CallToolResult:
        return await calls.await_answer(ctx, request_id, wait_seconds)

    return server
