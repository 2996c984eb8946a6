"""Bearer tokens for /v1: required whenever any are configured (and they must be before the
daemon listens beyond loopback). The operator pages (/docs, /openapi.json, /metrics) follow
the same tokens, and also open for a live web inbox session."""

from __future__ import annotations

import hmac

from fastapi import HTTPException, Request, status

from bridge.config import Settings
from bridge.errors import NotAPerson
from bridge.http.sessions import SESSION_COOKIE, session_row
from bridge.models import Request as BridgeRequest
from bridge.models import Responder
from bridge.people import LOCAL, People, normalize_handle
from bridge.store.base import Store


def token_name(settings: Settings, header: str | None) -> str | None:
    """The name of the configured token in an `Authorization: Bearer` header, else None.
    Every token is compared in constant time, with no early exit on a match."""
    if not header or not header.lower().startswith("bearer "):
        return None
    given = header[7:].strip().encode()
    found = None
    for name, token in settings.http.api_tokens.items():
        if hmac.compare_digest(given, token.token.encode()) and found is None:
            found = name
    return found


def token_ok(settings: Settings, header: str | None) -> bool:
    if not settings.http.api_tokens:
        return True
    return token_name(settings, header) is not None


async def require_api_token(request: Request) -> None:
    """FastAPI dependency guarding /v1."""
    check_api_token(request.app.state.settings, request.headers.get("authorization"))


def check_api_token(settings: Settings, header: str | None) -> None:
    """401 (an HTTPException) unless `header` carries one of http.api_tokens (sources check
    their own /v1 routes with it, against the settings they were built with: http.* is not
    reloaded)."""
    if not token_ok(settings, header):
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED,
            detail="missing or wrong bearer token (Authorization: Bearer <one of http.api_tokens>)",
            headers={"WWW-Authenticate": "Bearer"},
        )


def caller_name(settings: Settings, header: str | None) -> str:
    """Who calls /v1: the name of their API token, or `local` on an open bridge."""
    return token_name(settings, header) or LOCAL


def api_responder(settings: Settings, people: People, header: str | None, claimed: str | None) -> Responder:
    """The responder an API answer is recorded as.

    A token answers as itself (`api:<name>`); the body's `responder` is then only the name
    shown, so one token is one vote whatever names it types. A token with
    `act_for_others` answers for a *person of `people:`*, named as `person:ana`, `ana` or
    one of their handles (`slack:U…`), and is kept as who relayed the answer; any other
    name (invented, or a handle that belongs to nobody) raises NotAPerson: a relay cannot
    make up voters."""
    caller = caller_name(settings, header)
    own = Responder(platform="api", user_id=caller, name=caller)
    claimed = (claimed or "").strip()
    if claimed in ("", "api", caller, f"api:{caller}"):
        return own
    token = settings.http.api_tokens.get(caller)
    if token is None or not token.act_for_others:
        return own.model_copy(update={"name": claimed})
    relay = own.key
    name = people.person_named(claimed)
    if name is not None:
        return Responder(platform="person", user_id=name, name=name, person=name, relayed_by=relay)
    person = people.person_of(claimed)
    if person is None:
        raise NotAPerson(claimed[:80], caller)
    platform, _, ident = normalize_handle(claimed).partition(":")
    return Responder(platform=platform, user_id=ident, name=ident, person=person, relayed_by=relay)


def may_manage(settings: Settings, header: str | None, request: BridgeRequest) -> bool:
    """May this caller cancel `request`, or wait on it (a long poll, MCP's await_answer)?

    A token manages the requests it created (`created_by: api:<its name>`); a token with
    `act_for_others` (an operator's, a relay's) manages any; on an open bridge (no tokens)
    every caller is the same `local` one. Requests no token created (an engine's) are the
    operator's: only `act_for_others` tokens."""
    if not settings.http.api_tokens:
        return True
    caller = token_name(settings, header)
    if caller is None:
        return False
    token = settings.http.api_tokens[caller]
    return token.act_for_others or request.created_by == f"api:{caller}"


def may_manage_any(settings: Settings, header: str | None) -> bool:
    """Does `may_manage` say yes to this caller whatever the request (an open bridge, a
    token with `act_for_others`)? Then a check of many requests need not read each."""
    if not settings.http.api_tokens:
        return True
    caller = token_name(settings, header)
    return caller is not None and settings.http.api_tokens[caller].act_for_others


def not_yours(request: BridgeRequest, what: str) -> str:
    """Why `may_manage` said no, for the 403 (names the creator, never a token)."""
    creator = request.created_by or "an engine"
    return (f"request {request.id} was created by {creator}: only its creator's token, or one with "
            f"act_for_others, may {what} it")


async def operator_allowed(settings: Settings, store: Store, authorization: str | None,
                           session_cookie: str | None) -> bool:
    """May this caller read the operator pages? Yes with no tokens configured (like /v1),
    with one of `http.api_tokens`, or with a live web inbox session (a browser has no way
    to send a bearer token to /docs)."""
    if not settings.http.api_tokens or token_name(settings, authorization) is not None:
        return True
    if session_cookie is None:
        return False
    return await session_row(store, session_cookie) is not None


__all__ = ["SESSION_COOKIE", "api_responder", "caller_name", "may_manage", "may_manage_any", "not_yours",
           "operator_allowed", "require_api_token", "token_name", "token_ok"]
