"""The blocking client: scripts, threads, synchronous agent frameworks."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar, cast

import httpx

from hitl_bridge_client import calls
from hitl_bridge_client.answers import Answer, Questions, Views, approval_body, approved, asked
from hitl_bridge_client.calls import Flow
from hitl_bridge_client.transport import CREATE_GIVE_UP_S, Endpoint, Restarting, Retry, result
from hitl_bridge_client.watching import PATH, READ_TIMEOUT_S, Events, Outcome, Waits

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

    def wait_many(self, ids: Iterable[str], max_wait: float | None = None) -> Iterator[Outcome]:
        """Wait on many requests over one connection (a watch stream): yields each one's
        outcome as it closes, in the order they close: its `Answer`, or (yielded, not raised,
        so the others keep coming) `NoAnswer` when it closed without one, `Missing` for an id
        that is no request the token may wait on, `StillOpen` for each still open when
        `max_wait` seconds pass. A dropped stream (a daemon restart) is opened again with
        the ids still open; nothing is lost. At most 10,000 ids."""
        waits = Waits(ids, max_wait)
        retry: Retry | None = None
        while waits.open:
            body = waits.body()
            if body is None:
                yield from waits.ran_out()
                return
            try:
                with self._client().stream(
                        "POST", self.base_url + PATH, json=body, headers=self.endpoint.headers,
                        timeout=httpx.Timeout(calls.CALL_TIMEOUT_S, read=READ_TIMEOUT_S)) as response:
                    if response.status_code != 200:
                        response.read()
                        result(response)  # raises: a refusal, or Restarting (a proxy's 502-504)
                    retry, events = None, Events()
                    for line in response.iter_lines():
                        yield from waits.line(events, line)
                    if not waits.ended and waits.open:
                        raise Restarting("the watch stream was cut")
            except httpx.TransportError as exc:  # the daemon restarting: open the stream again
                retry = retry or Retry(self.endpoint, calls.Call("POST", PATH))
                time.sleep(retry.delay(exc))

    def get(self, request_id: str, *, wait: float = 0) -> dict[str, Any]:
        """The request as the API shows it (with posts and outbox); `wait` long-polls."""
        return self._run(calls.get(request_id, wait))

    def receipt(self, request_id: str) -> str:
        """The signed receipt of a closed request's outcome (check it with `verify_receipt`)."""
        return self._run(calls.receipt(request_id))

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

    def answer_batch(self, ids: Sequence[str], value: Any = None, *, values: dict[str, Any] | None = None,
                     responder: str | None = None, reason: str | None = None) -> dict[str, Any]:
        """The same answer to each of `ids`; a result per item (answered, voted, refused)."""
        return self._run(calls.answer_batch(ids, value, values=values, responder=responder, reason=reason))

    def batches(self, *, source: str | None = None, route: str | None = None) -> Views:
        """The open yes/no requests that look alike, grouped: `{key, label, ids, titles}` each."""
        return self._run(calls.batches(source, route))

    def away(self, delegate: str, until: str, *, starts: str | None = None,
             person: str | None = None) -> dict[str, Any]:
        """Away until `until` (ISO 8601 with an offset), `delegate` standing in."""
        return self._run(calls.away(delegate, until, starts=starts, person=person))

    def away_list(self) -> Views:
        return self._run(calls.away_list())

    def back(self, person: str | None = None) -> dict[str, Any]:
        return self._run(calls.back(person))

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
