"""The blocking client: scripts, threads, synchronous agent frameworks."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

import httpx

from hitl_bridge_client import calls
from hitl_bridge_client.answers import Answer, Questions, Views, approval_body, approved, asked
from hitl_bridge_client.calls import Flow
from hitl_bridge_client.transport import CREATE_GIVE_UP_S, Endpoint, Retry, result

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class Client:
    """The daemon's HTTP API. `base_url` and `token` default to HITL_BRIDGE_URL and
    HITL_BRIDGE_TOKEN (then http://127.0.0.1:8787, no token). While the daemon does not
    answer (a restart), calls are retried for `unavailable_after` seconds, then raise
    BridgeUnavailable; creating a request gives up after `create_unavailable_after` (5 s: no
    daemon at all is said at once, not after minutes). Use as a context manager, or `close()`,
    to free its connections."""

    def __init__(self, base_url: str | None = None, *, token: str | None = None,
                 unavailable_after: float = 300.0, http: httpx.Client | None = None,
                 create_unavailable_after: float = CREATE_GIVE_UP_S) -> None:
        self.endpoint = Endpoint.resolve(base_url, token, unavailable_after, create_unavailable_after)
        self.base_url = self.endpoint.base_url
        self._http = http

    def ask(self, title: str, questions: Questions | None = None, *, max_wait: float | None = None,
            **fields: Any) -> Answer:
        """Ask and wait for the answer. No `questions`: one Approve/Reject. `fields`: any
        field of the native request body (context, labels, responders, timeout_s,
        external_id, workspace, agent, tool...). `max_wait`: seconds to wait before raising
        StillOpen (the request stays open; `timeout_s` is the daemon's deadline for people)."""
        return self._run(calls.ask(asked(title, questions, fields), max_wait))

    def require_approval(self, title: str | None = None, **fields: Any) -> Callable[[F], F]:
        """Decorate a function: each call first asks for approval (showing its arguments)
        and runs only when approved; a rejection raises `Rejected`."""
        def decorate(fn: F) -> F:
            @functools.wraps(fn)
            def guarded(*args: Any, **kwargs: Any) -> Any:
                approved(self._run(calls.ask(approval_body(fn, args, kwargs, title, dict(fields)))))
                return fn(*args, **kwargs)
            return cast(F, guarded)
        return decorate

    def create(self, body: dict[str, Any]) -> str:
        """Create a request from a native or structured body; its id."""
        return self._run(calls.create(body))

    def wait(self, request_id: str, max_wait: float | None = None) -> Answer:
        """Long-poll until the request closes (NoAnswer when it closed without an answer)."""
        return self._run(calls.wait(request_id, max_wait))

    def get(self, request_id: str, *, wait: float = 0) -> dict[str, Any]:
        """The request as the API shows it (with posts and outbox); `wait` long-polls."""
        return self._run(calls.get(request_id, wait))

    def list(self, state: str | list[str] | None = None, *, source: str | None = None, route: str | None = None,
             limit: int = 100, offset: int = 0) -> Views:
        """Requests, newest first."""
        return self._run(calls.list_requests(state, source=source, route=route, limit=limit, offset=offset))

    def answer(self, request_id: str, value: Any = None, *, values: dict[str, Any] | None = None,
               responder: str | None = None, reason: str | None = None,
               grant: str | dict[str, Any] | None = None) -> dict[str, Any]:
        """Answer as an operator: `value` for one question, `values` by question id; `grant`
        with an approval: a standing approval (`session`, `span:3600`, `always`, or a dict)."""
        return self._run(calls.answer(request_id, value, values=values, responder=responder, reason=reason,
                                      grant=grant))

    def cancel(self, request_id: str, reason: str = "", *, actor: str | None = None) -> dict[str, Any]:
        return self._run(calls.cancel(request_id, reason, actor=actor))

    def redeliver(self, request_id: str) -> dict[str, Any]:
        return self._run(calls.redeliver(request_id))

    def events(self, request_id: str) -> Views:
        """The request's audit trail."""
        return self._run(calls.events(request_id))

    def grants(self, *, all: bool = False) -> Views:
        """The standing approvals in force (`all`: also the revoked and expired ones)."""
        return self._run(calls.grants(all=all))

    def grant(self, grant_id: str) -> dict[str, Any]:
        return self._run(calls.grant(grant_id))

    def revoke_grant(self, grant_id: str) -> dict[str, Any]:
        """Revoke a standing approval: the next call it would have allowed is asked again."""
        return self._run(calls.revoke_grant(grant_id))

    def sources(self) -> Views:
        """Each source and what it cannot show right now."""
        return self._run(calls.sources())

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _client(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client()
        return self._http

    def _run(self, flow: Flow[T]) -> T:
        reply: Any = None
        try:
            while True:
                reply = self._send(flow.send(reply))
        except StopIteration as done:
            return cast(T, done.value)

    def _send(self, call: calls.Call) -> Any:
        retry = Retry(self.endpoint, call)
        while True:
            try:
                return result(self._client().request(call.method, self.base_url + call.path, params=call.params,
                                                     json=call.json, headers=self.endpoint.headers,
                                                     timeout=call.timeout))
            except httpx.TransportError as exc:  # the daemon restarting: wait, then again
                time.sleep(retry.delay(exc))
