"""Jinja2 templates and the HTTP responses every inbox page shares (security headers,
no caching, ETag handling for the live fragments)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from adapters.web import views
from adapters.web.auth import CSRF_COOKIE, InboxAuth
from adapters.web.confirm import UNDO_SECONDS
from adapters.web.listing import TABS

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes browsers send `Origin: null`
    "Cache-Control": "no-store",
}


def build_environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = views.when
    env.filters["clock"] = views.clock
    env.filters["ago"] = views.ago
    env.globals["edit_default"] = views.edit_default
    env.globals["tabs"] = TABS
    env.globals["undo_s"] = UNDO_SECONDS
    return env


class Renderer:
    """Renders templates with the globals every page needs."""

    def __init__(self, title: str, poll_interval_s: float) -> None:
        self.env = build_environment()
        self.env.globals["site_title"] = title
        self.env.globals["poll_ms"] = int(poll_interval_s * 1000)

    def text(self, template: str, **context: Any) -> str:
        return self.env.get_template(template).render(**context)

    def page(self, template: str, *, status: int = 200, cookies: dict[str, str] | None = None,
             secure: bool = False, **context: Any) -> HTMLResponse:
        response = HTMLResponse(self.text(template, **context), status_code=status, headers=SECURITY_HEADERS)
        for name, value in (cookies or {}).items():
            set_cookie(response, name, value, secure=secure)
        return response

    def fragment(self, request: Request, template: str, **context: Any) -> Response:
        """A live fragment with a content ETag: 304 when the browser already has it."""
        return self.fragment_of(request, self.text(template, **context).encode())

    @staticmethod
    def fragment_of(request: Request, body: bytes) -> Response:
        """The response for a rendered fragment (shared by identical looks): 304 when the
        browser already has it."""
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        headers = {**SECURITY_HEADERS, "ETag": etag, "Cache-Control": "no-cache"}
        if etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="text/html; charset=utf-8", headers=headers)


async def read_form(request: Request) -> dict[str, list[str]] | None:
    """The submitted fields (text only), or None for a body that is not a readable form.
    Too large a body is left to the app's 413."""
    try:
        async with request.form(max_files=0, max_fields=1000) as form:
            out: dict[str, list[str]] = {}
            for key, value in form.multi_items():
                if isinstance(value, str):
                    out.setdefault(key, []).append(value)
            return out
    except HTTPException as exc:  # starlette's 400 for too many fields or files
        if exc.status_code != 400:
            raise
        return None
    except (MultiPartException, UnicodeDecodeError, ValueError, KeyError, AssertionError):
        return None


def browser_id(request: Request, auth: InboxAuth) -> tuple[str, dict[str, str]]:
    """This browser's CSRF id; a new one is set as a cookie on the response."""
    found = request.cookies.get(CSRF_COOKIE, "")
    if re.fullmatch(r"[A-Za-z0-9_-]{20,64}", found):
        return found, {}
    fresh = auth.new_browser_id()
    return fresh, {CSRF_COOKIE: fresh}


def set_cookie(response: Response, name: str, value: str, *, secure: bool, max_age: int | None = None) -> None:
    response.set_cookie(name, value, max_age=max_age, path="/inbox", httponly=True, samesite="strict",
                        secure=secure)


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers=SECURITY_HEADERS)


def is_secure(request: Request) -> bool:
    return request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"
