"""What an MCP tool call returns: a request as the API shows it, turned into the tool's
result (pure functions, no I/O).

`ask_human` and `request_approval` return JSON (as text and as structured content) with a
one-line `summary` for the model; `permission_prompt` returns exactly what Claude Code's
`--permission-prompt-tool` reads: the text `{"behavior": "allow", "updatedInput": {...}}` or
`{"behavior": "deny", "message": "..."}`. A request closed without a person's answer
(expired, cancelled, failed) never allows anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hitl_bridge_client import NoAnswer, outcome
from mcp_types import CallToolResult, TextContent

from adapters.mcp.requests import (
    APPROVE,
    ARGUMENTS,
    ASK_HUMAN,
    LABEL_CALL,
    PERMISSION_PROMPT,
    REQUEST_APPROVAL,
    WHY_NOT,
)
from bridge.models import Answer, RequestState
from bridge.outcome import Outcome, ending
from bridge.questions import Question

OPEN_STATES = ("pending", "posted")


@dataclass(frozen=True)
class Closing:
    """How a request ended, in the words the tool results use."""

    request_id: str
    state: str
    answered: bool  # a person's (or the timeout rule's) answer is there
    values: dict[str, Any]
    answered_by: str | None
    handle: str | None
    via: str | None
    reason: str | None
    summary: str

    @property
    def by_timeout(self) -> bool:
        return self.via == "timeout"


def closing_of(view: dict[str, Any]) -> Closing:
    """Read a closed request's view (`GET /v1/requests/{id}`)."""
    request_id = str(view.get("id", ""))
    state = str(view.get("state", ""))
    try:
        answer = outcome(view)
    except NoAnswer as gone:
        error = f": {gone.error}" if gone.error else ""
        summary = {"expired": f"Nobody answered in time (the request expired{error}).",
                   "cancelled": f"The request was cancelled{error}."}.get(state, f"The request {state}{error}.")
        return Closing(request_id, state, False, {}, None, None, None, gone.error, summary)
    if answer is None:
        raise ValueError(f"request {request_id} is still {state}")
    responder = answer.responder
    who = str(responder.get("person") or answer.responder_name)
    handle = f"{responder.get('platform')}:{responder.get('user_id')}"
    if answer.via == "timeout":
        summary = "Nobody answered in time; the route's on_timeout rule answered instead."
    else:
        summary = f"{_ended(view).headline} (through {answer.via})."
    return Closing(request_id, state, True, answer.values, who, handle, answer.via, answer.reason, summary)


def _ended(view: dict[str, Any]) -> Outcome:
    """The core's outcome of an answered request's view (its questions say approved or
    rejected)."""
    questions = [Question.model_validate(q) for q in view.get("questions") or []]
    answer = Answer.model_validate(view["answer"])
    return ending(RequestState(view["state"]), answer, questions, answer.values)


def result_for(view: dict[str, Any]) -> CallToolResult:
    """The result of the tool that asked this request (its `mcp_call` label), or that it is
    still open."""
    if view.get("state") in OPEN_STATES:
        return pending_result(view)
    call = (view.get("labels") or {}).get(LABEL_CALL)
    if call == PERMISSION_PROMPT:
        return permission_result(view)
    if call == REQUEST_APPROVAL:
        return approval_result(view)
    return ask_result(view)


def ask_result(view: dict[str, Any]) -> CallToolResult:
    closing = closing_of(view)
    data: dict[str, Any] = {"request_id": closing.request_id, "state": closing.state, "answered": closing.answered,
                            "summary": closing.summary}
    if closing.answered:
        data.update(values=closing.values, answered_by=closing.answered_by, handle=closing.handle,
                    via=closing.via, reason=closing.reason)
    return structured(data, error=not closing.answered)


@dataclass(frozen=True)
class Decision:
    """An approval's outcome: allowed (with these arguments) or not, and why."""

    closing: Closing
    allowed: bool
    arguments: dict[str, Any] | None
    edited: bool
    reason: str | None
    message: str


def decision_of(view: dict[str, Any]) -> Decision:
    """Allowed only on a "yes" (a person's, or the timeout rule's); the edited arguments when
    the person changed them. Edited arguments that are not a JSON object allow nothing."""
    closing = closing_of(view)
    original = view.get("context") if isinstance(view.get("context"), dict) else {}
    if not closing.answered:
        return Decision(closing, False, None, False, closing.reason, f"Not allowed. {closing.summary}")
    approved = closing.values.get(APPROVE) == "yes"
    reason = closing.reason or _text(closing.values.get(WHY_NOT))
    who = f"{closing.answered_by} (through {closing.via})"
    if not approved:
        why = f": {reason}" if reason else " (no reason given)"
        if closing.by_timeout:
            return Decision(closing, False, None, False, reason,
                            f"Not allowed: nobody answered in time and the route's timeout rule said no{why}")
        return Decision(closing, False, None, False, reason, f"Rejected by {who}{why}")
    edited = closing.values.get(ARGUMENTS)
    if edited is not None and not isinstance(edited, dict):
        return Decision(closing, False, None, False, reason,
                        f"Not allowed: {who} approved with edited arguments that are not a JSON object")
    arguments = edited if isinstance(edited, dict) else original
    changed = isinstance(edited, dict) and edited != original
    by = "the route's timeout rule (nobody answered in time)" if closing.by_timeout else who
    note = " with edited arguments" if changed else ""
    return Decision(closing, True, arguments, changed, reason, f"Allowed by {by}{note}.")


def approval_result(view: dict[str, Any]) -> CallToolResult:
    decision = decision_of(view)
    closing = decision.closing
    data: dict[str, Any] = {"request_id": closing.request_id, "state": closing.state,
                            "approved": decision.allowed, "summary": decision.message}
    if decision.allowed:
        data.update(arguments=decision.arguments, edited=decision.edited)
    data.update(reason=decision.reason, answered_by=closing.answered_by, via=closing.via)
    return structured(data)


def permission_result(view: dict[str, Any]) -> CallToolResult:
    decision = decision_of(view)
    if decision.allowed:
        return permission_text({"behavior": "allow", "updatedInput": decision.arguments})
    return permission_text({"behavior": "deny", "message": decision.message})


def permission_denied(message: str) -> CallToolResult:
    return permission_text({"behavior": "deny", "message": message})


def permission_text(verdict: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(verdict, ensure_ascii=False))])


def pending_result(view: dict[str, Any]) -> CallToolResult:
    """The call stops holding but the request stays open: the handle to wait on."""
    request_id = str(view.get("id", ""))
    return structured({
        "request_id": request_id, "state": str(view.get("state")), "pending": True,
        "summary": f"Nobody has answered yet; the request stays open. Call await_answer with request_id "
                   f"{request_id!r} to keep waiting (asking again would ask the people twice)."})


def failure(message: str, call: str = ASK_HUMAN) -> CallToolResult:
    """The call could not ask or wait (the bridge refused it, or did not answer)."""
    if call == PERMISSION_PROMPT:
        return permission_denied(message)
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def structured(data: dict[str, Any], *, error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
                          structured_content=data, is_error=error)


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None
