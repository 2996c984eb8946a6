"""`/docs` (Swagger UI) and `/redoc` that work offline: their scripts and styles are served
by the daemon from the pinned `fastapi-offline` package, which ships them (FastAPI's own
pages load them from a CDN, so they are blank without internet)."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

ASSETS = Path(fastapi_offline.__file__).parent / "static"
ASSETS_URL = "/docs-assets"
#: the pages run FastAPI's inline start-up script; nothing may load from elsewhere (ReDoc
#: would fetch its logo from Redocly's CDN)
DOCS_CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; "
            "base-uri 'none'; object-src 'none'")


def install_docs(app: FastAPI) -> None:
    """Add `/docs`, `/redoc` and their assets under ASSETS_URL (create the app with
    `docs_url=None, redoc_url=None`)."""
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _contained(get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} · API",
            swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
        ))

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _contained(get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} · API",
            redoc_js_url=f"{root}{ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS_URL}/favicon.png", with_google_fonts=False,
        ))


def _contained(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = DOCS_CSP
    page.headers["X-Content-Type-Options"] = "nosniff"
    return page
