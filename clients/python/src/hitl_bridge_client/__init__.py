"""Ask people from agent code, through a running hitl-bridge daemon.

    from hitl_bridge_client import ask, choice
    answer = ask("Deploy api v2.3 to production?")                 # Approve / Reject
    if answer.value == "yes": ...
    env = ask("Where to?", [choice("env", "Environment", ["staging", "prod"])]).values["env"]

    @require_approval(title="Run a shell command")
    def run(command: str) -> str: ...   # asks first; a rejection raises Rejected

The daemon is found at HITL_BRIDGE_URL (default http://127.0.0.1:8787) with the bearer
token HITL_BRIDGE_TOKEN; `Client` / `AsyncClient` take both as arguments too and offer the
rest of the API (get, list, answer, cancel, events...). `ask` creates the request
(idempotent on `external_id`, generated when not given, so a retried POST never asks
twice), then long-polls until the request closes, riding out a daemon restart.
Secret answers are never shown by the API: ask for a secret with a `callback` instead,
and check callbacks with `verify_callback`. Every outcome written back carries a signed
receipt: `verify_receipt(receipt, bridge_url_or_jwks)` proves who decided what.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

from hitl_bridge_client._version import __version__ as __version__
from hitl_bridge_client.aio import AsyncClient
from hitl_bridge_client.answers import (
    Answer,
    approval_body,
    approved,
    choice,
    confirm,
    outcome,
    request_body,
    text,
)
from hitl_bridge_client.client import Client
from hitl_bridge_client.errors import (
    BridgeError,
    BridgeRefused,
    BridgeUnavailable,
    Conflict,
    InvalidRequest,
    Missing,
    NoAnswer,
    NotABridge,
    NotFound,
    Rejected,
    StillOpen,
    Unauthorized,
)
from hitl_bridge_client.receipts import BadReceipt, fetch_jwks, verify_receipt
from hitl_bridge_client.signing import signature_headers, standard_secret, verify_callback

__all__ = [
    "Answer",
    "AsyncClient",
    "BadReceipt",
    "BridgeError",
    "BridgeRefused",
    "BridgeUnavailable",
    "Client",
    "Conflict",
    "InvalidRequest",
    "Missing",
    "NoAnswer",
    "NotABridge",
    "NotFound",
    "Rejected",
    "StillOpen",
    "Unauthorized",
    "approved",
    "ask",
    "choice",
    "confirm",
    "fetch_jwks",
    "outcome",
    "request_body",
    "require_approval",
    "signature_headers",
    "standard_secret",
    "text",
    "verify_callback",
    "verify_receipt",
]

F = TypeVar("F", bound=Callable[..., Any])


def ask(title: str, questions: list[dict[str, Any]] | None = None, **fields: Any) -> Answer:
    """`Client().ask(...)`: ask the daemon at HITL_BRIDGE_URL and wait for the answer."""
    with Client() as client:
        return client.ask(title, questions, **fields)


def require_approval(title: str | None = None, **fields: Any) -> Callable[[F], F]:
    """Put a person in front of a function (`def` or `async def`): each call asks the daemon
    at HITL_BRIDGE_URL first and runs only when approved; a rejection raises `Rejected`."""
    def decorate(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                async with AsyncClient() as client:
                    approved(await client.wait(await client.create(
                        approval_body(fn, args, kwargs, title, dict(fields)))))
                return await fn(*args, **kwargs)
            return cast(F, guarded_async)

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            with Client() as client:
                approved(client.wait(client.create(approval_body(fn, args, kwargs, title, dict(fields)))))
            return fn(*args, **kwargs)
        return cast(F, guarded)
    return decorate
