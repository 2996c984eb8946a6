"""Pure translation between Teal Agents' paused replies and the bridge model (PROTOCOLS §3).

`parse_pause` reads a `HitlResponse` (or the `StateResponse` wrapping it) and
`pause_to_request` turns it into a `RequestIn` with one `confirm` question per tool call.
`decision` turns the outcome into the resume body `{"action": "approve"|"reject"}`:
Teal decides all tool calls of a pause together, so it approves only when every call
was approved. `classify_reply` tells a resume reply that is another pause from a final one.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bridge.models import Answer, RequestIn
from bridge.questions import Question, QuestionKind, fit_json

ENGINE = "teal"
SAFE_ID = r"^[A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,99}$"  # no "/", never only dots
MAX_TOOL_CALLS = 50
MAX_ARGS_SHOWN = 3000


class InvalidPause(ValueError):
    """The body is not a Teal paused reply; the message says what is wrong."""


class TealToolCall(BaseModel):
    """A serialized semantic-kernel FunctionCallContent (only the fields we show)."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(default=None, max_length=200)
    plugin_name: str | None = Field(default=None, max_length=200)
    function_name: str | None = Field(default=None, max_length=200)
    name: str | None = Field(default=None, max_length=400)
    arguments: dict[str, Any] | str | None = None

    @property
    def label(self) -> str:
        if self.plugin_name and self.function_name:
            return f"{self.plugin_name}.{self.function_name}"
        return self.function_name or self.name or "tool"

    def argument_object(self) -> Any:
        """Arguments as JSON (they arrive as an object or as a JSON string)."""
        if isinstance(self.arguments, str):
            try:
                return json.loads(self.arguments)
            except (ValueError, RecursionError):
                return self.arguments
        return self.arguments or {}


class TealPause(BaseModel):
    """`HitlResponse`: a task paused until someone approves or rejects its tool calls."""

    model_config = ConfigDict(extra="ignore")

    session_id: str = Field(max_length=200)
    task_id: str = Field(max_length=200)
    request_id: str = Field(pattern=SAFE_ID)
    message: str = Field(default="Human intervention required.", max_length=5000)
    approval_url: str = Field(max_length=2000)
    rejection_url: str = Field(max_length=2000)
    tool_calls: list[TealToolCall] = Field(min_length=1, max_length=MAX_TOOL_CALLS)

    def fingerprint(self) -> str:
        """Stable digest of the tool calls: a follow-up pause reuses the request_id but
        never the calls (new LLM call ids), so request_id + fingerprint keys one pause."""
        calls = [c.model_dump(mode="json") for c in self.tool_calls]
        return hashlib.sha256(json.dumps(calls, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def external_id(self) -> str:
        return f"{self.task_id}:{self.request_id}:{self.fingerprint()}"


def parse_pause(body: Any) -> TealPause | None:
    """A paused reply, or None when `body` is a final reply (output or rejection notice).

    Accepts the bare `HitlResponse` and the `StateResponse` (`{status, content}`) around it.
    Raises InvalidPause for anything that is neither.
    """
    if not isinstance(body, dict):
        raise InvalidPause("expected a JSON object")
    if "content" in body and "status" in body:
        status = body.get("status")
        if status != "Paused":
            return None
        body = body["content"]
        if not isinstance(body, dict):
            raise InvalidPause("content must be an object")
    if "tool_calls" not in body and "approval_url" not in body:
        if "output" in body or "message" in body:
            return None  # TealAgentsResponse / RejectedToolResponse
        raise InvalidPause("neither a paused reply (tool_calls, approval_url) nor a final one")
    try:
        return TealPause.model_validate(body)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "body"
        raise InvalidPause(f"{where}: {err['msg']}") from None


def _short_json(value: Any) -> str:
    text = json.dumps(value, indent=2, sort_keys=True, default=str)
    return text if len(text) <= MAX_ARGS_SHOWN else text[: MAX_ARGS_SHOWN - 1] + "…"


def question_id(index: int) -> str:
    return f"tool_{index + 1}"


def pause_to_request(pause: TealPause, *, agent: str, title: str | None = None) -> RequestIn:
    """One `confirm` per tool call: "Run plugin.function with {arguments}?"."""
    questions = []
    calls = []
    for i, call in enumerate(pause.tool_calls):
        args = call.argument_object()
        calls.append(
            {"plugin": call.plugin_name, "function": call.function_name or call.name, "arguments": fit_json(args)}
        )
        questions.append(
            Question(
                id=question_id(i),
                kind=QuestionKind.confirm,
                prompt=f"Run {call.label}?",
                help_text=f"Arguments:\n{_short_json(args)}",
            )
        )
    labels = [c.label for c in pause.tool_calls]
    if title is None:
        title = f"Approve {labels[0]}" if len(labels) == 1 else f"Approve {len(labels)} tool calls"
    description = pause.message
    if len(labels) > 1:
        description += "\nThe agent runs all of these or none: approve each one to let it go on."
    return RequestIn(
        external_id=pause.external_id,
        title=title[:500],
        description=description,
        engine=ENGINE,
        run_id=pause.task_id,
        agent=agent[:500],
        tool=labels[0][:200],
        context={"session_id": pause.session_id, "task_id": pause.task_id, "tool_calls": calls},
        questions=questions,
    )


def decision(state: str, answer: Answer | None) -> Literal["approve", "reject"]:
    """approve only when there is an answer and every tool call in it was approved."""
    if state not in ("answered", "expired") or answer is None:
        return "reject"
    values = answer.values
    if values and all(str(v).lower() == "yes" for v in values.values()):
        return "approve"
    return "reject"


def resume_body(state: str, answer: Answer | None) -> dict[str, str]:
    return {"action": decision(state, answer)}


def resume_path(request_id: str) -> str:
    """The route under `{base}/{agent}/{version}`; the query string is not needed (the body decides)."""
    return f"/tealagents/v1alpha1/resume/{request_id}"
