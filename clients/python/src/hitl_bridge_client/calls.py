"""Each API operation as a flow, written once for both clients (no I/O here).

A flow is a generator: it yields the HTTP `Call`s it needs, receives each call's JSON
result, and returns the operation's result. `Client` runs flows with blocking httpx,
`AsyncClient` with asyncio; both bring the same retries (transport.py).
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

from hitl_bridge_client.answers import Answer, outcome
from hitl_bridge_client.errors import BridgeError, StillOpen

T = TypeVar("T")
WAIT_S = 60.0  # one long poll (the API allows up to 120 s)
CALL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: dict[str, Any] | None = None
    json: Any = None
    # safe to send again when the connection broke after sending (a read, or a create with
    # an external_id); an answer or a cancel is only sent again when it never left
    resend: bool = True
    timeout: float = CALL_TIMEOUT_S
    # creates a request: when the daemon does not answer, fail fast (nothing waits on it yet)
    creates: bool = False


Flow = Generator[Call, Any, T]


def request_path(request_id: str, action: str = "") -> str:
    return f"/v1/requests/{quote(str(request_id), safe='')}" + (f"/{action}" if action else "")


def part(reply: Any, key: str) -> Any:
    """`reply[key]`, or a BridgeError saying what the reply lacked (a proxy's page, another API)."""
    if not isinstance(reply, dict) or key not in reply:
        raise BridgeError(f"the bridge's reply has no {key!r}: {str(reply)[:200]}")
    return reply[key]


def create(body: dict[str, Any]) -> Flow[str]:
    view = yield Call("POST", "/v1/requests", json=body, resend="external_id" in body, creates=True)
    return str(part(view, "id"))


def get(request_id: str, wait: float = 0) -> Flow[dict[str, Any]]:
    params = {"wait": wait} if wait > 0 else None
    view: dict[str, Any] = yield Call("GET", request_path(request_id), params=params,
                                      timeout=wait + CALL_TIMEOUT_S)
    return view


def wait(request_id: str, max_wait: float | None = None) -> Flow[Answer]:
    """Long-poll until the request closes: its Answer, NoAnswer when it closed without one,
    StillOpen when `max_wait` seconds pass first (the request stays open)."""
    deadline = None if max_wait is None else time.monotonic() + max_wait
    while True:
        left = WAIT_S if deadline is None else max(0.0, min(WAIT_S, deadline - time.monotonic()))
        view = yield from get(request_id, wait=left)
        part(view, "state")
        found = outcome(view)
        if found is not None:
            return found
        if deadline is not None and time.monotonic() >= deadline:
            raise StillOpen(str(view.get("id", request_id)), str(view.get("state")))


def ask(body: dict[str, Any], max_wait: float | None = None) -> Flow[Answer]:
    request_id = yield from create(body)
    return (yield from wait(request_id, max_wait))


def list_requests(state: str | list[str] | None = None, *, source: str | None = None, route: str | None = None,
                  limit: int = 100, offset: int = 0) -> Flow[list[dict[str, Any]]]:
    params: dict[str, Any] = {"limit": limit, "offset": offset}
    if state:
        params["state"] = [state] if isinstance(state, str) else list(state)
    params.update({k: v for k, v in (("source", source), ("route", route)) if v})
    found = yield Call("GET", "/v1/requests", params=params)
    return list(part(found, "requests"))


def answer(request_id: str, value: Any = None, *, values: dict[str, Any] | None = None,
           responder: str | None = None, reason: str | None = None,
           grant: str | dict[str, Any] | None = None) -> Flow[dict[str, Any]]:
    """`value` for a request with one question, `values` by question id otherwise; `grant`
    with an approval: a standing approval (`session`, `span:3600`, `always`, or
    `{"scope": "always", "pattern": "Bash(npm test:*)"}`)."""
    body: dict[str, Any] = {"values": values} if values is not None else {"value": value}
    body.update({k: v for k, v in (("responder", responder), ("reason", reason), ("grant", grant))
                 if v is not None})
    view: dict[str, Any] = yield Call("POST", request_path(request_id, "answer"), json=body, resend=False)
    return view


def cancel(request_id: str, reason: str = "", *, actor: str | None = None) -> Flow[dict[str, Any]]:
    body = {"reason": reason, **({"actor": actor} if actor else {})}
    view: dict[str, Any] = yield Call("POST", request_path(request_id, "cancel"), json=body, resend=False)
    return view


def redeliver(request_id: str) -> Flow[dict[str, Any]]:
    view: dict[str, Any] = yield Call("POST", request_path(request_id, "redeliver"), resend=False)
    return view


def events(request_id: str) -> Flow[list[dict[str, Any]]]:
    found = yield Call("GET", request_path(request_id, "events"))
    return list(part(found, "events"))


def grant_path(grant_id: str) -> str:
    return f"/v1/grants/{quote(str(grant_id), safe='')}"


def grants(*, all: bool = False) -> Flow[list[dict[str, Any]]]:
    """The standing approvals in force (`all`: also the revoked and expired ones)."""
    found = yield Call("GET", "/v1/grants", params={"all": "true"} if all else None)
    return list(part(found, "grants"))


def grant(grant_id: str) -> Flow[dict[str, Any]]:
    view: dict[str, Any] = yield Call("GET", grant_path(grant_id))
    return view


def revoke_grant(grant_id: str) -> Flow[dict[str, Any]]:
    view: dict[str, Any] = yield Call("DELETE", grant_path(grant_id))
    return view


def sources() -> Flow[list[dict[str, Any]]]:
    found = yield Call("GET", "/v1/sources")
    return list(part(found, "sources"))
