"""Ask people from Python code: a small client for the bridge's HTTP API.

    from bridge.client import Client, confirm

    bridge = Client("http://127.0.0.1:8787", token=os.environ.get("BRIDGE_API_TOKEN"))
    answer = bridge.ask("Deploy api v2.3 to production?", [confirm("ok", "Deploy now?")],
                        context={"image": "api:2.3"}, timeout_s=3600)
    if answer.values["ok"] == "yes": ...

    @bridge.require_approval(title="Run a shell command")
    def run(command: str) -> str: ...   # asks first; a rejection raises Rejected

`ask` creates the request (idempotent on `external_id`, generated when not given, so a
retried POST never asks twice), then long-polls `GET /v1/requests/{id}?wait=` until the
request closes, riding out a daemon restart. `AsyncClient` is the same for asyncio code.

Secret answers are never shown by the API: ask for a secret with a `callback` instead.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import httpx

F = TypeVar("F", bound=Callable[..., Any])
WAIT_S = 60.0  # one long poll (the API allows up to 120 s)
RETRY_S = (0.2, 0.5, 1.0, 2.0, 5.0)  # backoff while the daemon does not answer


class BridgeError(Exception):
    """Base of the errors this client raises."""


class BridgeUnavailable(BridgeError):
    """The daemon did not answer for longer than `unavailable_after`."""


class BridgeRefused(BridgeError):
    """The daemon refused the call (bad token, invalid request...): `status` and `detail`."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"the bridge refused the call ({status}): {detail}")
        self.status = status
        self.detail = detail


class NoAnswer(BridgeError):
    """The request closed without an answer: `state` is expired, cancelled or failed."""

    def __init__(self, request_id: str, state: str, error: str | None) -> None:
        super().__init__(f"request {request_id} {state} without an answer" + (f": {error}" if error else ""))
        self.request_id = request_id
        self.state = state
        self.error = error


class Rejected(BridgeError):
    """An approval was rejected (by a person, or by the route's `on_timeout` answer)."""

    def __init__(self, answer: Answer) -> None:
        by = answer.responder.get("name") or answer.responder.get("user_id") or answer.via
        super().__init__(f"rejected by {by}" + (f": {answer.reason}" if answer.reason else ""))
        self.answer = answer
        self.reason = answer.reason


@dataclass(frozen=True)
class Answer:
    """What people answered: `values` by question id (a secret shows as "[secret]")."""

    request_id: str
    values: dict[str, Any]
    responder: dict[str, Any]
    via: str  # slack, telegram, web, api, cli, or timeout (the route's on_timeout answer)
    reason: str | None
    answered_at: str


def confirm(question_id: str, prompt: str) -> dict[str, Any]:
    return {"id": question_id, "kind": "confirm", "prompt": prompt}


def choice(question_id: str, prompt: str, options: list[str]) -> dict[str, Any]:
    return {"id": question_id, "kind": "choice", "prompt": prompt, "options": options}


def text(question_id: str, prompt: str, *, required: bool = True) -> dict[str, Any]:
    return {"id": question_id, "kind": "text", "prompt": prompt, "required": required}


def request_body(title: str, questions: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """The native intake body; `external_id` is generated when missing (safe retries)."""
    body = {k: v for k, v in fields.items() if v is not None}
    body.update(title=title, questions=questions)
    body.setdefault("external_id", f"client-{uuid.uuid4()}")
    return body


def outcome(view: dict[str, Any]) -> Answer | None:
    """The answer of a request as the API shows it; None while open; NoAnswer when it
    closed without one."""
    state = str(view.get("state"))
    if state in ("pending", "posted"):
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
        arguments = {k: _shown(v) for k, v in bound.arguments.items()}
    except TypeError:
        arguments = {"args": [_shown(a) for a in args], **{k: _shown(v) for k, v in kwargs.items()}}
    name = getattr(fn, "__name__", "call")
    context = {"function": name, "arguments": arguments, **fields.pop("context", {})}
    return request_body(title or f"Approve {name}?", [confirm("approve", f"Allow this call to {name}?")],
                        tool=name, context=context, **fields)


def approved(answer: Answer) -> Answer:
    if answer.values.get("approve") != "yes":
        raise Rejected(answer)
    return answer


def _shown(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)[:2000]
    return value


def _refusal(response: httpx.Response) -> BridgeRefused:
    try:
        detail = str(response.json().get("detail"))
    except (ValueError, AttributeError):
        detail = response.text[:500]
    return BridgeRefused(response.status_code, detail)


class _Base:
    def __init__(self, base_url: str, *, token: str | None = None, unavailable_after: float = 300.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.unavailable_after = unavailable_after

    def _retry_delay(self, attempt: int, started: float, exc: Exception) -> float:
        if time.monotonic() - started > self.unavailable_after:
            raise BridgeUnavailable(f"{self.base_url} did not answer for {self.unavailable_after:.0f} s: {exc}")
        return RETRY_S[min(attempt, len(RETRY_S) - 1)]


class _Restarting(httpx.TransportError):
    """A proxy in front of a restarting daemon (502/503/504): try again like a lost connection."""


def _result(response: httpx.Response) -> dict[str, Any]:
    if response.status_code in (502, 503, 504):
        raise _Restarting(f"HTTP {response.status_code}")
    if response.status_code >= 400:
        raise _refusal(response)
    data: dict[str, Any] = response.json()
    return data


def asked(title: str, questions: list[dict[str, Any]], fields: dict[str, Any]) -> dict[str, Any]:
    """The body for `ask`, which returns the answer itself: never for a secret."""
    if any(q.get("kind") == "secret" for q in questions):
        raise BridgeError("the API never shows a secret answer: create the request with a callback "
                          "(`create(request_body(..., callback={...}))`) and read the secret there")
    return request_body(title, questions, **fields)


class Client(_Base):
    """Blocking client (scripts, threads, synchronous agent frameworks)."""

    def ask(self, title: str, questions: list[dict[str, Any]], **fields: Any) -> Answer:
        """Ask and wait for the answer. `fields`: any field of the native request body
        (context, labels, responders, timeout_s, external_id, workspace, agent...)."""
        return self.wait(self.create(asked(title, questions, fields)))

    def create(self, body: dict[str, Any]) -> str:
        view = self._call("POST", "/v1/requests", json=body)
        return str(view["id"])

    def wait(self, request_id: str) -> Answer:
        while True:
            found = outcome(self._call("GET", f"/v1/requests/{request_id}", params={"wait": WAIT_S}))
            if found is not None:
                return found

    def require_approval(self, title: str | None = None, **fields: Any) -> Callable[[F], F]:
        """Decorate a function: each call first asks for approval (showing its arguments)
        and runs only when approved; a rejection raises `Rejected`."""
        def decorate(fn: F) -> F:
            @functools.wraps(fn)
            def guarded(*args: Any, **kwargs: Any) -> Any:
                body = approval_body(fn, args, kwargs, title, dict(fields))
                approved(self.wait(self.create(body)))
                return fn(*args, **kwargs)
            return cast(F, guarded)
        return decorate

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        started, attempt = time.monotonic(), 0
        with httpx.Client(base_url=self.base_url, headers=self.headers, timeout=WAIT_S + 30) as http:
            while True:
                try:
                    return _result(http.request(method, path, **kwargs))
                except httpx.TransportError as exc:  # the daemon restarting: wait, then again
                    time.sleep(self._retry_delay(attempt, started, exc))
                    attempt += 1


class AsyncClient(_Base):
    """The same for asyncio code; `require_approval` decorates `async def` functions."""

    async def ask(self, title: str, questions: list[dict[str, Any]], **fields: Any) -> Answer:
        return await self.wait(await self.create(asked(title, questions, fields)))

    async def create(self, body: dict[str, Any]) -> str:
        view = await self._call("POST", "/v1/requests", json=body)
        return str(view["id"])

    async def wait(self, request_id: str) -> Answer:
        while True:
            found = outcome(await self._call("GET", f"/v1/requests/{request_id}", params={"wait": WAIT_S}))
            if found is not None:
                return found

    def require_approval(self, title: str | None = None,
                         **fields: Any) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
        def decorate(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            @functools.wraps(fn)
            async def guarded(*args: Any, **kwargs: Any) -> Any:
                body = approval_body(fn, args, kwargs, title, dict(fields))
                approved(await self.wait(await self.create(body)))
                return await fn(*args, **kwargs)
            return guarded
        return decorate

    async def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        started, attempt = time.monotonic(), 0
        async with httpx.AsyncClient(base_url=self.base_url, headers=self.headers, timeout=WAIT_S + 30) as http:
            while True:
                try:
                    return _result(await http.request(method, path, **kwargs))
                except httpx.TransportError as exc:  # the daemon restarting: wait, then again
                    await asyncio.sleep(self._retry_delay(attempt, started, exc))
                    attempt += 1
