"""Build the ASGI app: core API + health/metrics + the routes adapters contribute."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from bridge.config import Settings
from bridge.http import api, audit_routes, grants_api, long_poll, people_api, watch
from bridge.http.body_limit import BodyLimit, too_large
from bridge.http.docs import install_docs
from bridge.http.fast_lane import FastLane
from bridge.http.guard import RequestGuard
from bridge.http.metrics import Metrics
from bridge.http.stack import NO_TELEMETRY, BridgeFastAPI
from bridge.service import BridgeService
from bridge.store.base import StoreError

COMPONENTS_KEY = "x-hitl-components"


class FirstRoute(Route):
    """A route the router tries before all others: a hot path (intake) skips matching the
    API's routes first. Its path and method must be served by no other route."""


def component_schemas(*models: type[BaseModel]) -> dict[str, Any]:
    """Schemas for routes that parse their own body: put under `openapi_extra[COMPONENTS_KEY]`,
    they are moved to `components.schemas` when the OpenAPI document is built."""
    out: dict[str, Any] = {}
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        out.update(schema.pop("$defs", {}))
        out[model.__name__] = schema
    return out


def _hoist_components(document: dict[str, Any]) -> dict[str, Any]:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict):
                schemas.update(operation.pop(COMPONENTS_KEY, {}))
    return document


def describe_errors(errors: Sequence[Any]) -> str:
    parts = []
    for err in errors[:5]:
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body",)]
        where = ".".join(loc) or "body"
        parts.append(f"{where}: {str(err.get('msg', 'invalid')).removeprefix('Value error, ')}")
    return "; ".join(parts)


def create_app(
    service: BridgeService,
    settings: Settings,
    extra_routes: Sequence[BaseRoute] = (),
    readiness: Callable[[], Awaitable[dict[str, Any]]] | None = None,
) -> FastAPI:
    app = BridgeFastAPI(
        title="hitl-bridge",
        version="0.1.0",
        description="Lets paused AI agent runs get answers from people.",
        docs_url=None, redoc_url=None,  # served by install_docs: offline, from a pinned package
        telemetry=NO_TELEMETRY,
    )
    install_docs(app)
    app.state.bridge = service
    app.state.settings = settings
    metrics = Metrics(service)
    app.state.metrics = metrics
    app.include_router(api.router)
    app.include_router(people_api.router)
    app.include_router(audit_routes.router)
    app.include_router(audit_routes.keys_router)
    app.include_router(grants_api.router)
    app.include_router(watch.router)
    long_poll.install(app.router.routes)
    app.router.routes[0:0] = [r for r in extra_routes if isinstance(r, FirstRoute)]
    app.router.routes.extend(r for r in extra_routes if not isinstance(r, FirstRoute))
    app.add_middleware(FastLane, routes=app.router.routes)  # hot routes, inside the two below (bridge.http.fast_lane)
    app.add_middleware(RequestGuard, settings=settings)  # Host, cross-site writes, throttles, docs
    app.add_middleware(BodyLimit, limit=settings.http.max_body_bytes)  # 413 for every route, streamed bodies too

    build_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _hoist_components(build_openapi())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.exception_handler(RequestValidationError)
    async def on_invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        return JSONResponse(
            status_code=422,
            content={"detail": describe_errors(errors),
                     "errors": [{"loc": e.get("loc"), "msg": e.get("msg")} for e in errors[:20]]},
        )

    @app.exception_handler(HTTPException)
    async def on_http_error(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 413:  # a streamed body over the limit: the same answer as a declared one
            return too_large(settings.http.max_body_bytes)
        return await http_exception_handler(request, exc)

    @app.exception_handler(StoreError)
    async def on_store_fault(_request: Request, exc: StoreError) -> JSONResponse:
        # "store full: …" / "store unavailable: …": the caller may retry; the operator sees the
        # fault once in the log and in /readyz (the store reported it), never a traceback per request
        return JSONResponse(status_code=503, content={"detail": str(exc)}, headers={"Retry-After": "30"})

    @app.get("/", include_in_schema=False)
    async def home() -> RedirectResponse:  # a person opening the daemon's address finds the inbox
        return RedirectResponse("/inbox", status_code=307)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"], response_model=None)
    async def readyz() -> dict[str, Any] | JSONResponse:
        try:
            counts = await service.store.count_by_state()
        except Exception as exc:
            return JSONResponse(status_code=503, content={"status": "store unavailable", "error": str(exc)})
        extra = await readiness() if readiness else {}
        if extra.get("ready") is False:
            reasons = [f"{c['component']}: {c['summary']}" for c in extra.get("checks", [])
                       if c.get("status") == "failing"]
            return JSONResponse(status_code=503, content={"status": "not ready", "reasons": reasons, **extra})
        return {"status": "ready", "requests": counts, **extra}

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse)
    async def prometheus() -> PlainTextResponse:
        body, content_type = await metrics.render()
        return PlainTextResponse(body, media_type=content_type)

    return app
