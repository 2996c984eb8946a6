"""/v1/grants: the standing approvals people made, read and revoked.

Token scopes as for requests (bridge.http.auth): a token with `act_for_others` (an
operator's) sees and revokes every grant; any other token only the grants it made itself
(`granted_by: api:<its name>`); an open bridge (no tokens) is one `local` caller."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse

from bridge.errors import BridgeError
from bridge.http.api import error_response, service_of
from bridge.http.auth import caller_name, require_api_token, token_name
from bridge.store.concerns.grants import Grant

router = APIRouter(prefix="/v1", dependencies=[Depends(require_api_token)], tags=["grants"])


def grant_view(grant: Grant, now: Any) -> dict[str, Any]:
    data = grant.model_dump(mode="json")
    data["active"] = grant.active(now)
    return data


def sees_all(request: Request) -> bool:
    settings = request.app.state.settings
    if not settings.http.api_tokens:
        return True
    name = token_name(settings, request.headers.get("authorization"))
    return name is not None and settings.http.api_tokens[name].act_for_others


def caller_handle(request: Request) -> str:
    return f"api:{caller_name(request.app.state.settings, request.headers.get('authorization'))}"


def mine(request: Request, grant: Grant) -> bool:
    return sees_all(request) or grant.granted_by == caller_handle(request)


@router.get("/grants")
async def list_grants(request: Request, all: bool = Query(default=False, description=(
        "also the revoked and expired ones"))) -> dict[str, Any]:
    """Newest first: those in force, or (`all=true`) every grant kept."""
    service = service_of(request)
    found = await service.list_grants(active_only=not all)
    now = service.clock.now()
    return {"grants": [grant_view(g, now) for g in found if mine(request, g)]}


@router.get("/grants/{grant_id}", response_model=None)
async def get_grant(request: Request, grant_id: str) -> dict[str, Any] | JSONResponse:
    service = service_of(request)
    try:
        grant = await service.get_grant(grant_id[:100])
    except BridgeError as exc:
        return error_response(exc)
    if not mine(request, grant):
        raise HTTPException(403, f"grant {grant_id} was made by {grant.granted_by}: only that token, or one "
                                 "with act_for_others, may read it")
    return grant_view(grant, service.clock.now())


@router.delete("/grants/{grant_id}", response_model=None)
async def revoke_grant(request: Request, grant_id: str) -> dict[str, Any] | JSONResponse:
    """Revoke it: the next call it would have allowed is asked of a person, on every replica."""
    service = service_of(request)
    try:
        grant = await service.get_grant(grant_id[:100])
        if not mine(request, grant):
            raise HTTPException(403, f"grant {grant_id} was made by {grant.granted_by}: only that token, or one "
                                     "with act_for_others, may revoke it")
        revoked = await service.revoke_grant(grant.id, actor=caller_handle(request))
    except BridgeError as exc:
        return error_response(exc)
    return grant_view(revoked, service.clock.now())
