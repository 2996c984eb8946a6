"""The daemon's ASGI app class: FastAPI's middleware stack less two layers the bridge does not use.

Every request, intake's hot path included, passes each layer of the stack. FastAPI puts in
two the bridge has no use for: its OpenTelemetry exception hook (the bridge configures no
OpenTelemetry tracer; its metrics are its own, on /metrics) and its request-body limit
(unset here: `bridge.http.body_limit.BodyLimit` refuses every body over
`http.max_body_bytes`, declared or streamed). What stays: the server-error handler (a 500
that says nothing of the crash), our guard and body limit, the exception handlers (422,
503 ...) and FastAPI's exit stack that its routes need. FastAPI's OpenTelemetry is off as a
whole (`NO_TELEMETRY`): else every request looks up three global providers first.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi._body_limit import AppBodyLimitMiddleware
from fastapi.telemetry import TelemetryConfig
from fastapi.telemetry._asgi import ExceptionTelemetryMiddleware
from starlette.types import ASGIApp

UNUSED = (ExceptionTelemetryMiddleware, AppBodyLimitMiddleware)
#: FastAPI's own OpenTelemetry, off: no spans, metrics or log export, nothing configured from the environment
NO_TELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False, "operation_spans": False,
                                 "auto_configure": False}


class BridgeFastAPI(FastAPI):
    """FastAPI with the `UNUSED` layers taken out of its stack (the body limit only while
    FastAPI's own `max_body_size` is unset)."""

    def build_middleware_stack(self) -> ASGIApp:
        outer = super().build_middleware_stack()
        layer = outer
        while layer is not self.router and (inner := getattr(layer, "app", None)) is not None:
            if isinstance(inner, UNUSED) and not (isinstance(inner, AppBodyLimitMiddleware)
                                                  and self.max_body_size is not None):
                layer.app = inner.app  # type: ignore[attr-defined]
                continue
            layer = inner
        return outer


def layers(app: ASGIApp) -> list[str]:
    """The class names of the stack's layers, outermost first (tests, docs)."""
    names = []
    layer: object = app
    while layer is not None:
        names.append(type(layer).__name__)
        layer = getattr(layer, "app", None) if not names[-1] == "APIRouter" else None
    return names
