"""/v1 endpoints for many decisions at once and for people away: a batch answer
(`POST /v1/answers:batch`) and delegation windows (`/v1/away`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from bridge.batches import MAX_BATCH, approvable, batches
from bridge.delegation import Delegation
from bridge.errors import BridgeError, NotAPerson
from bridge.http.api import error_response, service_of
from bridge.http.auth import api_responder, caller_name, require_api_token
from bridge.models import OPEN_STATES, Responder
from bridge.store.query import RequestQuery

#: open requests looked at for batches
SCANNED = 1000
router = APIRouter(prefix="/v1", dependencies=[Depends(require_api_token)], tags=["batches and delegation"])


class BatchBody(BaseModel):
    """The same answer to each of `ids` (at most MAX_BATCH); each item goes through the
    ordinary answer path and gets its own result."""

    ids: list[str] = Field(min_length=1, max_length=MAX_BATCH, description="the requests to answer")
    values: dict[str, Any] | None = Field(default=None, description="values keyed by question id, for every item")
    value: Any = Field(default=None, description="the answer to each item's one question (instead of values)")
    responder: str = Field(default="api", max_length=200, description="as for one answer (AnswerBody.responder)")
    reason: str | None = Field(default=None, max_length=2000)


class AwayBody(BaseModel):
    """`person` is away until `until` (from `starts`, default now); `delegate` stands in."""

    delegate: str = Field(min_length=1, max_length=200, description="the person of people: who stands in")
    until: datetime = Field(description="when the window ends (with a UTC offset)")
    starts: datetime | None = Field(default=None, description="when it starts (default: now)")
    person: str = Field(default="api", max_length=200, description=(
        "who is away: with a token that acts for others, a person of people: (or one of their handles); "
        "otherwise the token's own identity, which must be a handle of a person"))


def window_view(window: Delegation) -> dict[str, Any]:
    return window.as_json()


async def caller_responder(request: Request, claimed: str) -> Responder:
    settings = request.app.state.settings
    return api_responder(settings, service_of(request).people, request.headers.get("authorization"), claimed)


@router.post("/answers:batch", response_model=None)
async def answer_batch(request: Request, body: BatchBody) -> dict[str, Any] | JSONResponse:
    """Answer each request of `ids` with the same values: `{batch, counts, results}` with one
    result per item (answered, voted, or refused with the reason), in the order given."""
    service = service_of(request)
    try:
        responder = await caller_responder(request, body.responder)
        result = await service.answer_batch(body.ids, responder, via="api", values=body.values, value=body.value,
                                            reason=body.reason)
    except BridgeError as exc:
        return error_response(exc)
    return result.as_json()


@router.get("/batches")
async def list_batches(request: Request, source: str | None = None, route: str | None = None) -> dict[str, Any]:
    """The open yes/no requests that look alike (bridge.batches), largest batch first: what
    one "approve all" could decide. Each item is still answered on its own."""
    service = service_of(request)
    query = RequestQuery(states=tuple(sorted(OPEN_STATES)), source=source or None, route=route or None)
    found = batches(await service.store.find_requests(query, limit=SCANNED), service.route_of)
    return {"batches": [{"key": b.key, "label": b.label, "ids": b.ids[:MAX_BATCH],
                         "titles": [r.title for r in b.requests[:MAX_BATCH]]} for b in found if approvable(b)]}


@router.get("/away")
async def list_away(request: Request) -> dict[str, Any]:
    """The delegation windows not yet ended."""
    return {"away": [window_view(w) for w in await service_of(request).delegations()]}


@router.post("/away", response_model=None)
async def set_away(request: Request, body: AwayBody) -> dict[str, Any] | JSONResponse:
    """Set (or replace) a delegation window; 422 says why one is refused."""
    service = service_of(request)
    settings = request.app.state.settings
    try:
        who = service.person_acting(await caller_responder(request, body.person))
        window = await service.away(who, body.delegate, body.until, starts=body.starts,
                                    by=f"api:{caller_name(settings, request.headers.get('authorization'))}")
    except (BridgeError, NotAPerson) as exc:
        return error_response(exc)
    return window_view(window)


@router.delete("/away", response_model=None)
async def end_away(request: Request, person: str = "api") -> dict[str, Any] | JSONResponse:
    """End the caller's (or, acting for others, `person`'s) window now."""
    service = service_of(request)
    try:
        who = service.person_acting(await caller_responder(request, person))
    except BridgeError as exc:
        return error_response(exc)
    return {"person": who, "ended": await service.back(who)}
