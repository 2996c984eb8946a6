"""Build the ASGI app: core API + health/metrics + the routes adapters contribute."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.routing import BaseRoute

from bridge.config import Settings
from bridge.http import api
from bridge.http.limits import BodySizeLimit
from bridge.http.metrics import Metrics
from bridge.service import BridgeService


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
    app = FastAPI(
        title="hitl-bridge",
        version="0.1.0",
        description="Lets paused AI agent runs get answers from people.",
    )
    app.state.bridge = service
    app.state.settings = settings
    metrics = Metrics(service)
    app.state.metrics = metrics
    app.include_router(api.router)
    app.router.routes.extend(extra_routes)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        return JSONResponse(
            status_code=422,
            content={"detail": describe_errors(errors),
                     "errors": [{"loc": e.get("loc"), "msg": e.get("msg")} for e in errors[:20]]},
        )

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
            return JSONResponse(status_code=503, content={"status": "starting", **extra})
        return {"status": "ready", "requests": counts, **extra}

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse)
    async def prometheus() -> PlainTextResponse:
        body, content_type = await metrics.render()
        return PlainTextResponse(body, media_type=content_type)

    app.add_middleware(BodySizeLimit, max_bytes=settings.http.max_body_bytes)
    return app
