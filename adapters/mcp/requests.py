"""What an MCP tool call asks the bridge: the request bodies for `POST /v1/requests` (pure
functions, no I/O).

Every request from MCP says where it came from, so `routes:` can send it to the right
people: `engine: mcp`, `tool` (the tool asked about), `agent` (the MCP client) and the
labels `mcp_client`, `mcp_tool`, `mcp_call`, on top of the labels the operator configured
(which win over labels the agent sends: the agent cannot pick a laxer route).
"""

from __future__ import annotations

import fnmatch
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hitl_bridge_client import request_body

ENGINE = "mcp"
LABEL_CLIENT = "mcp_client"
LABEL_TOOL = "mcp_tool"
LABEL_CALL = "mcp_call"
RESERVED_PREFIX = "mcp_"

# the bridge tools that ask (the value of the `mcp_call` label)
ASK_HUMAN = "ask_human"
REQUEST_APPROVAL = "request_approval"
PERMISSION_PROMPT = "permission_prompt"
CALLS = (ASK_HUMAN, REQUEST_APPROVAL, PERMISSION_PROMPT)

# question ids of an approval
APPROVE = "approve"
ARGUMENTS = "arguments"
WHY_NOT = "reason"

MAX_TITLE = 200
MAX_TOOL_NAME = 200
PREVIEW_KEYS = ("command", "file_path", "path", "url", "query", "pattern", "prompt", "description")
SECRET_REFUSAL = (
    "a secret question is never asked through MCP: the tool result goes to the model and into the "
    "client's transcript. Ask for a secret with a callback instead: POST /v1/requests with "
    '"callback": {"url": ..., "secret": ...} (or hitl_bridge_client: create(request_body(..., '
    "callback={...}))); the answer is POSTed, signed, to your callback and never shown by the API.")


class Refused(ValueError):
    """The call cannot become a request; the message says why and what to do instead."""


@dataclass(frozen=True)
class Caller:
    """Who asks (the MCP client's name) and what the operator set for every request."""

    client: str = "mcp"
    labels: Mapping[str, str] = field(default_factory=dict)
    #: offer the person an edit of the arguments before allowing: all tools, none, or name globs
    edit_arguments: bool | tuple[str, ...] = False

    def editable(self, tool_name: str) -> bool:
        if isinstance(self.edit_arguments, bool):
            return self.edit_arguments
        return any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.edit_arguments)


def labels_for(caller: Caller, call: str, tool: str, asked: Mapping[str, str] | None = None) -> dict[str, str]:
    """The agent's labels, then the operator's, then where the request came from (each wins
    over the one before)."""
    return {**(asked or {}), **caller.labels,
            LABEL_CLIENT: caller.client[:500], LABEL_TOOL: tool[:500], LABEL_CALL: call}


def ask_body(caller: Caller, title: str, questions: Sequence[Mapping[str, Any]], *,
             context: Mapping[str, Any] | None = None, timeout_s: float | None = None,
             labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`ask_human`: the agent's own questions (a free-text answer when it gives none)."""
    if any(q.get("kind") == "secret" for q in questions):
        raise Refused(SECRET_REFUSAL)
    asked = [dict(q) for q in questions] or [{"id": "answer", "kind": "text", "prompt": title}]
    return request_body(title, asked, engine=ENGINE, agent=caller.client, context=dict(context or {}),
                        labels=labels_for(caller, ASK_HUMAN, ASK_HUMAN, labels), timeout_s=timeout_s,
                        external_id=f"mcp-{uuid.uuid4()}")


def approval_body(caller: Caller, call: str, tool_name: str, arguments: Mapping[str, Any], *,
                  why: str = "", timeout_s: float | None = None, labels: Mapping[str, str] | None = None,
                  tool_use_id: str | None = None) -> dict[str, Any]:
    """`request_approval` / `permission_prompt`: Approve or Reject a tool call whose arguments
    are the request's context (each one shown to the person). With `edit_arguments` the
    person may also change them (an `edit` question pre-filled with them) and say why not.
    A `tool_use_id` (Claude Code sends one) makes a retried prompt find the same request."""
    name = tool_name.strip()[:MAX_TOOL_NAME] or "tool"
    questions: list[dict[str, Any]] = [
        {"id": APPROVE, "kind": "confirm", "prompt": f"Allow `{name}` with these arguments?"}]
    if caller.editable(name):
        questions += [
            {"id": ARGUMENTS, "kind": "edit", "required": False, "default": dict(arguments),
             "prompt": f"Arguments for `{name}` (change them to allow a different call)"},
            {"id": WHY_NOT, "kind": "text", "required": False,
             "prompt": "Why not? (told to the agent when you reject)"},
        ]
    external_id = f"mcp:{tool_use_id}" if tool_use_id else f"mcp-{uuid.uuid4()}"
    return request_body(approval_title(name, arguments), questions, description=why, engine=ENGINE,
                        agent=caller.client, tool=name, context=dict(arguments),
                        labels=labels_for(caller, call, name, labels), timeout_s=timeout_s,
                        external_id=external_id[:200])


def approval_title(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """`Allow Bash: npm test` — what a phone notification can show in one line."""
    preview = next((arguments[k] for k in PREVIEW_KEYS if isinstance(arguments.get(k), str)), None)
    if preview is None:
        preview = next((v for v in arguments.values() if isinstance(v, str)), "")
    line = " ".join(str(preview).split())
    title = f"Allow {tool_name}: {line}" if line else f"Allow {tool_name}?"
    return title if len(title) <= MAX_TITLE else title[:MAX_TITLE - 1] + "…"
