"""AG-UI interrupts to bridge requests and answers to resume entries (pure, no I/O)."""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import Interrupt, ResumeEntry

from bridge.models import Answer, RequestIn

MAX_CHOICES = 50


def request_for(interrupt: Interrupt, thread_id: str, agent: str) -> RequestIn:
    """One request per interrupt: its message is the question; a boolean response schema
    asks yes/no, a string enum asks for one option, anything else asks for text."""
    schema = interrupt.response_schema or {}
    prompt = (interrupt.message or f"The agent waits for input ({interrupt.reason}).")[:2000]
    question: dict[str, Any] = {"id": "answer", "kind": "text", "prompt": prompt}
    enum = schema.get("enum")
    if schema.get("type") == "boolean":
        question = {"id": "answer", "kind": "confirm", "prompt": prompt}
    elif isinstance(enum, list) and 0 < len(enum) <= MAX_CHOICES and all(isinstance(e, str) for e in enum):
        question = {"id": "answer", "kind": "choice", "prompt": prompt, "options": enum}
    context: dict[str, Any] = {"thread_id": thread_id, "interrupt_id": interrupt.id, "reason": interrupt.reason}
    if interrupt.tool_call_id:
        context["tool_call_id"] = interrupt.tool_call_id
    if schema:
        context["response_schema"] = _clip(schema)
    return RequestIn.model_validate({
        "external_id": f"agui:{thread_id}:{interrupt.id}"[:200], "engine": "agui", "agent": agent,
        "run_id": thread_id[:200], "session": thread_id[:200], "title": prompt.splitlines()[0][:500],
        "description": prompt if len(prompt) > 500 else "", "questions": [question], "context": context})


def resume_entry(interrupt_id: str, kind: str, answer: Answer | None) -> ResumeEntry:
    """The resume entry for one interrupt: resolved with the payload the schema asked for, or
    cancelled when the request closed without an answer."""
    if answer is None:
        return ResumeEntry(interrupt_id=interrupt_id, status="cancelled")
    value = answer.values.get("answer")
    payload: Any = value == "yes" if kind == "confirm" else value
    return ResumeEntry(interrupt_id=interrupt_id, status="resolved", payload=payload)


def _clip(value: dict[str, Any]) -> Any:
    text = json.dumps(value)
    return value if len(text) <= 4000 else {"clipped": text[:4000]}
