"""The request bodies this client sends and the answers it reads back: plain functions, no I/O."""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hitl_bridge_client.errors import BridgeError, NoAnswer, Rejected

OPEN_STATES = ("pending", "posted")
Questions = list[dict[str, Any]]
Views = list[dict[str, Any]]  # request views, events... as the API shows them (`list` is a client method)


@dataclass(frozen=True)
class Answer:
    """What people answered: `values` by question id (a secret shows as "[secret]")."""

    request_id: str
    values: dict[str, Any]
    responder: dict[str, Any]
    via: str  # slack, telegram, web, email, api, cli, or timeout (the route's on_timeout answer)
    reason: str | None
    answered_at: str

    @property
    def value(self) -> Any:
        """The value when the request had one question (`ask("Deploy?").value == "yes"`)."""
        if len(self.values) != 1:
            raise BridgeError(f"this answer has {len(self.values)} values: read answer.values[question_id]")
        return next(iter(self.values.values()))

    @property
    def responder_name(self) -> str:
        return str(self.responder.get("name") or self.responder.get("user_id") or self.via)


def confirm(question_id: str, prompt: str) -> dict[str, Any]:
    return {"id": question_id, "kind": "confirm", "prompt": prompt}


def choice(question_id: str, prompt: str, options: list[str]) -> dict[str, Any]:
    return {"id": question_id, "kind": "choice", "prompt": prompt, "options": options}


def text(question_id: str, prompt: str, *, required: bool = True) -> dict[str, Any]:
    return {"id": question_id, "kind": "text", "prompt": prompt, "required": required}


def request_body(title: str, questions: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    """The native intake body. No questions: one Approve/Reject (`ok`). `external_id` is
    generated when missing, so a retried POST never asks twice."""
    body = {k: v for k, v in fields.items() if v is not None}
    body.update(title=title, questions=questions or [confirm("ok", title)])
    body.setdefault("external_id", f"client-{uuid.uuid4()}")
    return body


def asked(title: str, questions: list[dict[str, Any]] | None, fields: dict[str, Any]) -> dict[str, Any]:
    """The body for `ask`, which returns the answer itself: never for a secret."""
    if any(q.get("kind") == "secret" for q in questions or []):
        raise BridgeError("the API never shows a secret answer: create the request with a callback "
                          "(`create(request_body(..., callback={...}))`) and read the secret there")
    return request_body(title, questions, **fields)


def outcome(view: dict[str, Any]) -> Answer | None:
    """The answer of a request as the API shows it; None while open; NoAnswer when it
    closed without one."""
    state = str(view.get("state"))
    if state in OPEN_STATES:
        return None
    answer = view.get("answer")
    if not isinstance(answer, dict):
        raise NoAnswer(str(view.get("id")), state, view.get("error"))
    return Answer(request_id=str(view.get("id")), values=dict(answer.get("values") or {}),
                  responder=dict(answer.get("responder") or {}), via=str(answer.get("via")),
                  reason=answer.get("reason"), answered_at=str(answer.get("answered_at")))


def approval_body(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], title: str | None,
                  fields: dict[str, Any]) -> dict[str, Any]:
    """A confirm request showing the call: the function's name and its arguments."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        arguments = {k: shown(v) for k, v in bound.arguments.items()}
    except TypeError:
        arguments = {"args": [shown(a) for a in args], **{k: shown(v) for k, v in kwargs.items()}}
    name = getattr(fn, "__name__", "call")
    context = {"function": name, "arguments": arguments, **fields.pop("context", {})}
    return request_body(title or f"Approve {name}?", [confirm("approve", f"Allow this call to {name}?")],
                        tool=name, context=context, **fields)


def approved(answer: Answer, question_id: str = "approve") -> Answer:
    """The answer when it approves; `Rejected` otherwise."""
    if answer.values.get(question_id) != "yes":
        raise Rejected(answer)
    return answer


def shown(value: Any) -> Any:
    """A value as the request's context can hold it: itself when JSON can, else its repr."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)[:2000]
    return value
