"""/v1 endpoints of the core (intake lives in the webhook source: POST /v1/requests)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, ValidationError

from bridge.errors import BridgeError, NotAPerson
from bridge.http.auth import api_responder, caller_name, may_manage, not_yours, require_api_token
from bridge.http.views import (
    event_view,
    offer_view,
    outbox_view,
    post_view,
    request_view,
    request_view_json,
    votes_view,
)
from bridge.models import Request as BridgeRequest
from bridge.models import RequestState
from bridge.policy import GrantChoice, GrantOffer
from bridge.ports import source_problems
from bridge.questions import MAX_CONTEXT_DEPTH
from bridge.service import BridgeService
from bridge.store.query import RequestQuery

router = APIRouter(prefix="/v1", dependencies=[Depends(require_api_token)], tags=["requests"])

MAX_WAIT_S = 120.0
MAX_PROBLEMS_SHOWN = 100


class AnswerBody(BaseModel):
    """Values keyed by question id; `value` is a shortcut when there is one question."""

    values: dict[str, Any] | None = None
    value: Any = None
    responder: str = Field(default="api", max_length=200, description=(
        "who answered: with a token allowed to act for others (http.api_tokens.<name>.act_for_others), "
        "a person of people: (person:<name>, <name> or one of their handles such as slack:U…), counted "
        "as that person (anyone else is refused: 403); otherwise only the name shown, and the answer "
        "counts as the token's own (api:<token name>)"))
    reason: str | None = Field(default=None, max_length=2000)
    grant: dict[str, Any] | str | None = Field(default=None, description=(
        "with an approval: a standing approval for calls like this one (bridge.policy): "
        '{"scope": "session"|"span"|"always", "span_s": 3600, "pattern": "Bash(npm test:*)"}, or a '
        "button key: once, session, span:3600, always"))


class CancelBody(BaseModel):
    reason: str = Field(default="", max_length=2000)
    actor: str = Field(default="api", max_length=200, description=(
        "who says they cancel: kept as a note (`claimed_actor`) in the audit event, whose actor is "
        "always the verified caller (api:<token name>)"))


def service_of(request: Request) -> BridgeService:
    service: BridgeService = request.app.state.bridge
    return service


def error_response(exc: BridgeError) -> JSONResponse:
    return JSONResponse(status_code=exc.status, content={"detail": str(exc)})


@router.get("/sources", tags=["ops"])
async def list_sources(request: Request) -> dict[str, Any]:
    """Each source and what keeps it from showing some of its engine's requests right now
    (a Delta mailbox that cannot be read, an engine that does not answer...)."""
    out = []
    for name, source in service_of(request).sources.items():
        problems = source_problems(source)
        shown = sorted(problems.items())[:MAX_PROBLEMS_SHOWN]
        out.append({"name": name, "problem_count": len(problems),
                    "problems": [{"where": where, "reason": reason} for where, reason in shown]})
    return {"sources": out}


@router.get("/requests")
async def list_requests(
    request: Request,
    state: list[RequestState] | None = Query(default=None),  # noqa: B008
    source: str | None = None,
    route: str | None = None,
    limit: int = Query(default=100, ge=1, le=1000),
    offset: int = Query(default=0, ge=0),
    before: str | None = Query(default=None, max_length=200),
) -> dict[str, Any]:
    """Newest first. Page on with `before=<next>`: each page costs the same however far in,
    while an `offset` is read past (kept for small skips)."""
    store = service_of(request).store
    cursor = None
    if before:
        anchor = await store.get_request(before)
        if anchor is None:
            raise HTTPException(400, f"before: no request {before!r}")
        cursor = (anchor.created_at, anchor.id)
    query = RequestQuery(states=tuple(state or ()), source=source or None, route=route or None, before=cursor)
    rows = await store.find_requests(query, limit=limit, offset=offset)
    page: dict[str, Any] = {"requests": [request_view(r) for r in rows]}
    if len(rows) == limit:
        page["next"] = rows[-1].id
    return page


@router.get("/requests/{request_id}")
async def get_request(
    request: Request, request_id: str, wait: float = Query(default=0, ge=0, le=MAX_WAIT_S)
) -> dict[str, Any]:
    # a long poll (wait > 0) is served by bridge.http.long_poll, leaner while it waits
    service = service_of(request)
    if wait:
        await check_may_wait(request, request_id)
    found = await service.wait_closed(request_id, wait) if wait else await service.get(request_id)
    if found is None:
        raise HTTPException(404, f"no request {request_id!r}")
    return await request_detail(service, found)


async def check_may_wait(request: Request, request_id: str) -> None:
    """A long poll waits only on a request the caller may manage (`auth.may_manage`): 403
    otherwise (404 when there is no such request)."""
    current = await service_of(request).get(request_id)
    if current is None:
        raise HTTPException(404, f"no request {request_id!r}")
    if not may_manage(request.app.state.settings, request.headers.get("authorization"), current):
        raise HTTPException(403, not_yours(current, "wait on"))


async def request_detail(service: BridgeService, found: BridgeRequest) -> dict[str, Any]:
    """What GET /v1/requests/{id} answers: the request with its copies, deliveries and votes."""
    view = request_view(found)
    view["posts"] = [post_view(p) for p in await service.store.list_posts(found.id)]
    view["outbox"] = [outbox_view(o) for o in await service.store.list_outbox(request_id=found.id)]
    view.update(await votes_view(service, found))
    view["grant_offers"] = [offer_view(o) for o in service.grant_offers(found)] if found.is_open else []
    return view


async def answer_body(request: Request) -> AnswerBody:
    """The answer body, parsed here rather than by FastAPI, whose parser answers 400 to JSON
    nested deeper than Python's decoder goes: any depth gets the same 422 here."""
    try:
        raw = json.loads(await request.body())
    except RecursionError:
        raise HTTPException(422, f"values: nested deeper than {MAX_CONTEXT_DEPTH} levels") from None
    except ValueError:
        raise RequestValidationError([{"type": "json_invalid", "loc": ("body",),
                                       "msg": "the body is not valid JSON (UTF-8)"}]) from None
    try:
        return AnswerBody.model_validate(raw)
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]) from None


@router.post("/requests/{request_id}/answer", response_model=None, openapi_extra={"requestBody": {
    "required": True, "content": {"application/json": {"schema": AnswerBody.model_json_schema()}}}})
async def answer_request(request: Request, request_id: str) -> Response:
    body = await answer_body(request)
    service = service_of(request)
    current = await service.get(request_id)
    if current is None:
        raise HTTPException(404, f"no request {request_id!r}")
    values = body.values
    if values is None:
        if len(current.questions) != 1:
            raise HTTPException(422, "this request has several questions: send `values` keyed by question id")
        values = {current.questions[0].id: body.value}
    settings = request.app.state.settings
    authorization = request.headers.get("authorization")
    try:
        responder = api_responder(settings, service.people, authorization, body.responder)
    except NotAPerson as exc:  # a relay naming someone who is nobody: refused, and on the record
        await service.note(request_id, "refused", f"api:{caller_name(settings, authorization)}",
                           {"name": exc.who, "via": "api", "reason": "not a person"})
        return error_response(exc)
    try:  # read here, not by the body's model: its schema stays one object for the API's pages
        grant = GrantOffer.parse_key(body.grant) if isinstance(body.grant, str) else \
            None if body.grant is None else GrantChoice.model_validate(body.grant)
    except ValueError as exc:
        raise HTTPException(422, f"grant: {exc}") from None
    try:
        updated = await service.answer(request_id, responder, values, via="api", reason=body.reason, grant=grant,
                                       known=current)
    except BridgeError as exc:
        return error_response(exc)
    # serialised here: FastAPI's encoder walking the dict again was a tenth of an answer's CPU
    return Response(request_view_json(updated), media_type="application/json")


@router.post("/requests/{request_id}/cancel", response_model=None)
async def cancel_request(
    request: Request, request_id: str, body: CancelBody | None = None
) -> dict[str, Any] | JSONResponse:
    """Cancel a request: the audit records the verified caller (`api:<token name>`). A token
    cancels the requests it created; one with `act_for_others` any (`auth.may_manage`)."""
    body = body or CancelBody()
    service = service_of(request)
    settings = request.app.state.settings
    header = request.headers.get("authorization")
    current = await service.get(request_id)
    if current is None:
        raise HTTPException(404, f"no request {request_id!r}")
    if not may_manage(settings, header, current):
        raise HTTPException(403, not_yours(current, "cancel"))
    actor = f"api:{caller_name(settings, header)}"
    claimed = body.actor.strip()
    try:
        updated = await service.cancel(request_id, actor=actor, reason=body.reason,
                                       claimed=claimed if claimed not in ("", "api", actor) else None)
    except BridgeError as exc:
        return error_response(exc)
    return request_view(updated)


@router.post("/requests/{request_id}/redeliver", response_model=None)
async def redeliver_request(request: Request, request_id: str) -> dict[str, Any] | JSONResponse:
    try:
        updated = await service_of(request).redeliver(request_id, actor="api")
    except BridgeError as exc:
        return error_response(exc)
    return request_view(updated)


@router.get("/requests/{request_id}/events")
async def request_events(request: Request, request_id: str) -> dict[str, Any]:
    service = service_of(request)
    if await service.get(request_id) is None:
        raise HTTPException(404, f"no request {request_id!r}")
    return {"events": [event_view(e) for e in await service.store.list_events(request_id)]}
