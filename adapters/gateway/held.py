"""A held `tools/call` as a bridge request, and the request's close as what the call does
(pure functions, no I/O).

The request says everything a rule or a person needs: `tool` is the name the agent called
(prefix included), `context` its arguments, `annotations` the tool's MCP annotations
(`readOnlyHint`, `destructiveHint`, …, and its `title`), `session` the agent's MCP session,
`engine: mcp-gateway` and the label `mcp_server`. People see the server's description of
the tool and may edit the arguments (the same Approve / edit questions as `request_approval`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_types import CallToolResult, TextContent, Tool

from adapters.mcp.requests import Caller, approval_body
from adapters.mcp.results import decision_of

ENGINE = "mcp-gateway"
LABEL_SERVER = "mcp_server"
LABEL_GATEWAY = "mcp_gateway"
CALL = "tools/call"  # the `mcp_call` label of a held call
MAX_DESCRIPTION = 4000


class ArgumentsRefused(ValueError):
    """A call's arguments cannot become a request (too large, not JSON); nothing is asked."""


def annotations_of(tool: Tool) -> dict[str, Any]:
    """The tool's MCP annotations as the spec spells them, with its title when it has one."""
    found: dict[str, Any] = {}
    if tool.annotations is not None:
        found = tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
    title = tool.title or found.get("title")
    if title:
        found["title"] = str(title)[:200]
    return found


def checked_arguments(arguments: Mapping[str, Any] | None, max_bytes: int) -> dict[str, Any]:
    """The arguments, when they fit a request; else ArgumentsRefused saying why."""
    args = dict(arguments or {})
    try:
        size = len(json.dumps(args, ensure_ascii=False, allow_nan=False).encode())
    except (TypeError, ValueError) as exc:
        raise ArgumentsRefused(f"the arguments are not plain JSON ({exc})") from None
    if size > max_bytes:
        raise ArgumentsRefused(f"the arguments are {size:,} bytes; this gateway asks about at most "
                               f"{max_bytes:,} (max_arguments_bytes)")
    return args


def held_call_body(caller: Caller, *, gateway: str, server: str, listed_name: str, tool: Tool,
                   arguments: Mapping[str, Any], session: str | None) -> dict[str, Any]:
    """`POST /v1/requests` body for the call: the approval `request_approval` asks, said as
    the gateway's."""
    description = (tool.description or "").strip()
    about = f"Server `{server}`, tool `{tool.name}`" + (f": {description}" if description else "")
    if len(about) > MAX_DESCRIPTION:
        about = about[:MAX_DESCRIPTION - 1] + "…"
    body = approval_body(caller, CALL, listed_name, arguments, why=about)
    body.update(engine=ENGINE, annotations=annotations_of(tool), external_id=f"gateway-{uuid.uuid4()}")
    if session:
        body["session"] = session[:200]
    body["labels"] = {**body["labels"], LABEL_SERVER: server, LABEL_GATEWAY: gateway}
    return body


@dataclass(frozen=True)
class Verdict:
    """What the call does: forward with `arguments`, or return `refusal` (a tool error)."""

    allowed: bool
    arguments: dict[str, Any]
    message: str

    def refusal(self) -> CallToolResult:
        return tool_error(self.message)


def verdict_of(view: dict[str, Any]) -> Verdict:
    """Allowed only on a "yes" (a person's, a rule's, or the route's timeout answer), with
    the arguments the person left; anything else is a refusal saying why."""
    decision = decision_of(view)
    if decision.allowed and isinstance(decision.arguments, dict):
        return Verdict(True, dict(decision.arguments), decision.message)
    return Verdict(False, {}, f"{decision.message} (request {view.get('id')})")


def tool_error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)
