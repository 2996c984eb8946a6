"""`GET /v1/audit`: the record, in chain order, a page at a time, for tokens with `audit: true`;
`GET /.well-known/jwks.json`: the public keys of the signed receipts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse

from bridge.audit.export import MAX_PAGE, page
from bridge.config import Settings
from bridge.http.auth import may_manage, not_yours, require_api_token, token_name
from bridge.models import Request as BridgeRequest

router = APIRouter(prefix="/v1", dependencies=[Depends(require_api_token)], tags=["audit"])


def may_audit(settings: Settings, header: str | None) -> bool:
    """A token with `audit: true` reads the record; on an open bridge (no tokens) every caller may."""
    if not settings.http.api_tokens:
        return True
    name = token_name(settings, header)
    return name is not None and settings.http.api_tokens[name].audit


@router.get("/audit")
async def audit_export(
    request: Request,
    since: datetime | None = Query(None, description="Events at or after this time (ISO 8601)."),  # noqa: B008
    until: datetime | None = Query(None, description="Events before this time (ISO 8601)."),  # noqa: B008
    after: int = Query(0, ge=0, le=2**62, description="Continue after this chain position (the last page's `next`)."),
    limit: int = Query(MAX_PAGE, ge=1, le=MAX_PAGE, description="Rows read for this page (at most 1000)."),
) -> dict[str, Any]:
    """One page of the record: events as stored (who acted as the daemon verified them,
    secret answers redacted) with their chain hashes. `next` is the `after` of the next page
    (null at the end); a page reads at most `limit` rows, so pages may hold fewer entries when
    `since`/`until` skip some."""
    settings: Settings = request.app.state.settings
    if not may_audit(settings, request.headers.get("authorization")):
        raise HTTPException(403, "this token may not read the audit record: give it `audit: true` in "
                                 "http.api_tokens")
    for name, value in (("since", since), ("until", until)):
        if value is not None and value.tzinfo is None:
            raise HTTPException(422, f"{name}: give a time zone (2026-01-31T09:00:00Z)")
    store = request.app.state.bridge.store
    found = await page(store, since=since, until=until, after=after, limit=limit)
    state = await store.chain_state()
    return {"events": found.entries, "next": found.next_after,
            "head": {"seq": state.seq, "hash": state.hash}}


@router.get("/requests/{request_id}/receipt")
async def request_receipt(request: Request, request_id: str) -> dict[str, str]:
    """The signed receipt of a closed request's outcome (a compact JWS; verify it with the
    keys at /.well-known/jwks.json). For the request's creator, `act_for_others` and `audit` tokens."""
    settings: Settings = request.app.state.settings
    service = request.app.state.bridge
    found = await service.get(request_id)
    if found is None:
        raise HTTPException(404, f"no request {request_id[:80]!r}")
    header = request.headers.get("authorization")
    if not (may_manage(settings, header, found) or may_audit(settings, header)):
        raise HTTPException(403, not_yours(found, "read the receipt of"))
    if found.is_open:
        raise HTTPException(409, f"request {found.id} is still {found.state.value}: a receipt comes with its outcome")
    return {"receipt": await service.notary.receipt(found, outcome_state(found))}


def outcome_state(found: BridgeRequest) -> str:
    """The outcome a closed request was written back with (delivered or failed: its answer's)."""
    if found.state.value in ("answered", "expired", "cancelled"):
        return found.state.value
    if found.answer is not None:
        return "expired" if found.answer.via == "timeout" else "answered"
    return "cancelled"


keys_router = APIRouter(tags=["audit"])


@keys_router.get("/.well-known/jwks.json")
async def jwks(request: Request) -> JSONResponse:
    """The public keys that verify receipts (RFC 7517), newest first; old keys stay listed so
    old receipts still verify. Public: a receipt is checked without a token."""
    keys = request.app.state.bridge.notary.keys
    found = await keys.jwks()
    if not found["keys"]:  # no receipt signed yet: make the key now, so a verifier can fetch it first
        await keys.signing_key()
        found = await keys.jwks()
    return JSONResponse(found, headers={"Cache-Control": "public, max-age=300"})
