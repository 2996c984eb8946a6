"""The generic HTTP intake (`POST /v1/requests`) and its signed-callback write-back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import httpx
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.routing import BaseRoute

from adapters.webhook.callback import signed_request
from adapters.webhook.egress import CallbackPolicy, CallbackRefused, GuardedTransport
from adapters.webhook.structured import StructuredRequestIn, is_structured, structured_answer, to_native
from bridge.errors import BridgeError, NotTheSameRequest
from bridge.http.app import COMPONENTS_KEY, FirstRoute, component_schemas, describe_errors
from bridge.http.auth import check_api_token, token_name
from bridge.http.fast_lane import Endpoint
from bridge.http.views import request_view_json
from bridge.models import RequestIn, has_lone_surrogate
from bridge.ports import DeliveryError, Outcome, RequestSink
from bridge.questions import MAX_CONTEXT_DEPTH
from bridge.registry import AdapterContext

JSON = "application/json"


def parse_body(raw: bytes) -> Any:
    """The JSON of a request body, or a 422 naming what is wrong with it. A body nested
    deeper than the JSON parser goes gets the same 422 as any body nested too deeply:
    nothing below recurses, whatever the depth (see `bridge.questions._depth`)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise HTTPException(422, f"body: nested deeper than {MAX_CONTEXT_DEPTH} levels (the most "
                                 "context and question defaults may nest)") from None
    except ValueError:
        raise HTTPException(422, "the body is not valid JSON (UTF-8)") from None


class WebhookConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "webhook"
    # 410 Gone from a callback URL means "stop"; other errors are retried
    timeout_s: float = Field(default=10, gt=0, le=300)
    # how callbacks are signed unless a request's callback says: X-Hitl headers or Standard Webhooks
    signing: Literal["hitl", "standard"] = "hitl"


def native_answer(outcome: Outcome) -> dict[str, Any]:
    request = outcome.request
    answer = outcome.answer
    return {
        "request_id": request.id,
        "external_id": request.external_id,
        "state": outcome.state,
        "answer": None if answer is None else {
            "values": answer.values,
            "responder": answer.responder.model_dump(),
            "via": answer.via,
            "answered_at": answer.answered_at.isoformat(),
            "reason": answer.reason,
        },
        "reason": request.error if outcome.state != "answered" else None,
    }


class WebhookSource:
    """Receives requests over HTTP; delivers outcomes to each request's `callback`."""

    def __init__(self, config: WebhookConfig, ctx: AdapterContext) -> None:
        self.name = config.name
        self.config = config
        self.settings = ctx.settings  # http.* (the tokens) is not reloaded
        http = ctx.settings.http
        # a loopback-only bridge is asked only by local processes, which reach the inside anyway
        self.policy = CallbackPolicy(http.callback_allow, allow_private=http.callback_allow_private
                                     or http.loopback_only)
        self._transport: GuardedTransport | None = None
        self._timeout = httpx.Timeout(config.timeout_s).as_dict()
        self.sink: RequestSink | None = None  # given with the routes

    async def run(self, sink: RequestSink) -> None:
        return None  # requests arrive through http_routes()

    def transport(self) -> GuardedTransport:
        """One keep-alive pool for every callback, made on first use."""
        if self._transport is None:
            self._transport = GuardedTransport(self.policy)
        return self._transport

    async def close(self) -> None:
        if self._transport is not None:
            await self._transport.aclose()

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        """POST `body` to `url` on the guarded transport; the response's status. Straight to the
        transport: a callback needs none of the client's cookies, auth, redirects or base URL
        (that layer was a tenth of an answered request's CPU); redirects are not followed."""
        request = httpx.Request("POST", url, content=body, headers=headers, extensions={"timeout": self._timeout})
        response = await self.transport().handle_async_request(request)
        try:
            await response.aread()  # the connection goes back to the pool once the body is read
        finally:
            await response.aclose()
        return response.status_code

    async def deliver(self, outcome: Outcome) -> None:
        request = outcome.request
        callback = request.callback
        if callback is None:
            return  # the caller polls GET /v1/requests/{id}?wait=
        refusal = self.policy.refusal(callback.url)
        if refusal is not None:
            raise DeliveryError(f"callback {callback.url} refused: {refusal}", permanent=True)
        values = outcome.answer.values if outcome.answer else None
        payload = structured_answer(request, values, outcome.state) if request.format == "structured" \
            else native_answer(outcome)
        if outcome.receipt is not None:  # the signed receipt rides along (verify_receipt in the clients)
            payload["receipt"] = outcome.receipt
        body, headers = signed_request(callback.secret, payload, request.id, outcome.state,
                                       callback.signing or self.config.signing)
        try:
            status = await self.post(callback.url, body, headers)
        except CallbackRefused as exc:  # checked on the resolved address: nothing was sent
            raise DeliveryError(f"callback {callback.url} refused: {exc}", permanent=True) from None
        except httpx.HTTPError as exc:
            raise DeliveryError(f"callback {callback.url}: {type(exc).__name__}: {exc}") from None
        if status == 410:
            raise DeliveryError(f"callback {callback.url} answered 410 Gone", permanent=True)
        if not 200 <= status < 300:
            raise DeliveryError(f"callback {callback.url} answered HTTP {status}")

    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        self.sink = sink
        # The hot path of intake: the body is parsed by `intake` rather than by FastAPI's
        # dependency machinery (a third of the per-request cost); the schema is still published.
        router = APIRouter(prefix="/v1", tags=["requests"])
        source = self
        body_schema = {
            "description": "The native request model (DESIGN §3) or the structured-questions body (PROTOCOLS §2).",
            "required": True,
            "content": {"application/json": {
                "schema": {"oneOf": [{"$ref": "#/components/schemas/RequestIn"},
                                     {"$ref": "#/components/schemas/StructuredRequestIn"}]},
                "examples": {
                    "native": {"value": {"title": "Deploy to prod?", "external_id": "run-42",
                                         "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]}},
                    "structured": {"value": {"request_id": "q-1", "objective": "Pick an environment",
                                             "questions": [{"id": "env", "question": "Which?",
                                                            "input_type": "selection",
                                                            "options": ["staging", "prod"]}]}},
                }}},
        }

        @router.post(
            "/requests",
            status_code=201,
            response_model=None,
            openapi_extra={"requestBody": body_schema,
                           COMPONENTS_KEY: component_schemas(RequestIn, StructuredRequestIn)},
            responses={200: {"description": "already known (a retry: same caller, external_id, route and "
                                            "content): the stored request"},
                       201: {"description": "stored; the body is the request"},
                       401: {"description": "missing or wrong bearer token"},
                       409: {"description": "the caller's external_id names another request (`differs`: "
                                            "creator, route, content)"},
                       413: {"description": "body too large"},
                       422: {"description": "invalid, or asks more than its route allows: field named"}},
        )
        async def create_request(http: Request) -> Response:
            return await source.intake(http)

        # The route above documents the operation; this one serves it as a plain handler, from
        # inside the app's own guards (bridge.http.fast_lane): FastAPI's request handling
        # (dependencies, query and cookie parsing), its exception and exit-stack layers and
        # matching the API's routes were a third of a create's CPU. Errors still reach the
        # app's handlers (401, 413, 422, 503...).
        return [FirstRoute("/v1/requests", Endpoint(source.intake), methods=["POST"], include_in_schema=False),
                *router.routes]

    async def intake(self, http: Request) -> Response:
        """POST /v1/requests: store the request (or find the one with its external_id) and
        answer with it; 201 when created, 200 when it was known."""
        authorization = http.headers.get("authorization")
        check_api_token(self.settings, authorization)
        body = parse_body(await http.body())
        if not isinstance(body, dict):
            raise HTTPException(422, "the body must be a JSON object")
        if has_lone_surrogate(body):
            raise HTTPException(422, "the body holds text that is not valid Unicode (a lone surrogate)")
        assert self.sink is not None  # set with the routes that lead here
        structured = is_structured(body)
        try:
            native = to_native(StructuredRequestIn.model_validate(body)) if structured \
                else RequestIn.model_validate(body)
        except ValidationError as exc:
            raise HTTPException(422, describe_errors(exc.errors())) from None
        refusal = self.policy.refusal(native.callback.url) if native.callback is not None else None
        if refusal is not None:
            raise HTTPException(422, f"callback.url: {refusal}")
        caller = token_name(self.settings, authorization)
        try:
            request, created = await self.sink.submit(
                native, source=self.name, format="structured" if structured else "native",
                created_by=f"api:{caller}" if caller else None,
            )
        except BridgeError as exc:  # a body that loosens its route (422), not a retry of its external_id (409)
            content: dict[str, Any] = {"detail": str(exc)}
            if isinstance(exc, NotTheSameRequest):
                content["differs"] = [what.split(" ")[0] for what in exc.differs]
            return JSONResponse(content, status_code=exc.status)
        return Response(request_view_json(request), status_code=201 if created else 200, media_type=JSON)


def build_source(section: dict[str, Any], ctx: AdapterContext) -> WebhookSource:
    return WebhookSource(ctx.parse(WebhookConfig, section), ctx)
