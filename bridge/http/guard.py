"""The checks every HTTP request passes before any route sees it (an ASGI middleware):

1. `Host` is one of `http.allowed_hosts` (DNS rebinding); the probes and /metrics answer
   any Host, like a load balancer or Prometheus expects.
2. Writes to /v1 come from no other site (`Origin`, `Sec-Fetch-Site`) and carry JSON
   (`415` otherwise): a plain cross-site form or `fetch(..., {mode: "no-cors"})` can send
   neither without the browser asking the bridge first, and the bridge never says yes.
3. A client address that keeps sending wrong credentials (answers 401) is told to wait
   (`429` + `Retry-After`) before any credential it sends is looked at again.
4. /docs, /openapi.json and /metrics follow `http.api_tokens` (or an inbox session);
   `http.metrics_public: true` opens /metrics for scrapers that cannot send a token.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bridge.config import Settings
from bridge.http.auth import SESSION_COOKIE, operator_allowed
from bridge.http.hosts import WILDCARD_LISTEN, HostPolicy, allowed_hosts
from bridge.http.throttle import FailureThrottle, Occasional, client_key

log = logging.getLogger("hitl_bridge.http")

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
ANY_HOST_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
DOCS_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})
AUTH_FAILURE_WINDOW_S = 60.0
LOGIN_PAGE = "/inbox/login"


def is_json_media_type(value: str) -> bool:
    media = value.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def has_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    if length is not None:
        return length.strip() not in ("0", "")
    return "transfer-encoding" in headers


def cross_site(headers: Headers) -> bool:
    """True when the browser says another site sent this request."""
    if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return True
    origin = headers.get("origin")
    if origin is None:
        return False
    host = headers.get("host", "")
    return origin.lower() not in (f"http://{host}".lower(), f"https://{host}".lower()) or not host


class RequestGuard:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.hosts = HostPolicy(allowed_hosts(settings))
        if settings.http.allowed_hosts is None and settings.http.host in WILDCARD_LISTEN \
                and not settings.http.public_url:
            log.warning("listening on all interfaces: requests must say Host %s; set http.public_url (or "
                        "http.allowed_hosts) to the names clients use", self.hosts.describe())
        self.auth_failures = FailureThrottle(settings.http.max_auth_failures, AUTH_FAILURE_WINDOW_S)
        self._host_log = Occasional(log)
        self._auth_log = Occasional(log)
        self._cross_log = Occasional(log)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the bridge serves no websockets; lifespan passes
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        path: str = scope.get("path", "")
        method: str = scope.get("method", "GET")
        client = scope.get("client")
        address = client[0] if client else None

        host = headers.get("host")
        if path not in ANY_HOST_PATHS and not self.hosts.allows(host):
            self._host_log.warning("refused a request for Host %r from %s: not in http.allowed_hosts (%s)",
                                   (host or "")[:100], address or "-", self.hosts.describe())
            await _reply(send, 400, "this bridge does not answer to that Host name; if this is how clients "
                                    "reach it, add the name to http.allowed_hosts (or set http.public_url)")
            return

        key = client_key(address)
        presents_credentials = "authorization" in headers
        if presents_credentials and self.auth_failures.blocked(key):
            await _reply(send, 429, "too many wrong credentials from this address; wait and try again",
                         headers={"retry-after": str(self.auth_failures.retry_after(key))})
            return

        if (path == "/v1" or path.startswith("/v1/")) and method not in SAFE_METHODS:
            if cross_site(headers):
                self._cross_log.warning("refused a cross-site %s %s from %s (Origin %r)", method, path[:100],
                                        address or "-", (headers.get("origin") or "")[:100])
                await _reply(send, 403, "cross-site requests to /v1 are refused (Origin or Sec-Fetch-Site "
                                        "names another site)")
                return
            content_type = headers.get("content-type")
            if (content_type is not None or has_body(headers)) and not is_json_media_type(content_type or ""):
                await _reply(send, 415, "send the body as JSON (Content-Type: application/json)")
                return

        if path in DOCS_PATHS or (path == "/metrics" and not self.settings.http.metrics_public):
            refused = await self._operator_refusal(scope, headers)
            if refused is not None:
                if presents_credentials:
                    self.auth_failures.fail(key)  # a wrong token here counts like anywhere else
                await refused(send)
                return

        if not presents_credentials:
            await self.app(scope, receive, send)
            return

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                self.auth_failures.fail(key)
                self._auth_log.warning("wrong credentials from %s for %s %s", address or "-", method, path[:100])
            await send(message)

        await self.app(scope, receive, watch)

    async def _operator_refusal(self, scope: Scope, headers: Headers) -> Callable[[Send], Awaitable[None]] | None:
        cookies = cookie_parser(headers.get("cookie", ""))
        store = scope["app"].state.bridge.store
        if await operator_allowed(self.settings, store, headers.get("authorization"), cookies.get(SESSION_COOKIE)):
            return None
        if "authorization" not in headers and "text/html" in headers.get("accept", "") and _has_login(scope):
            target = LOGIN_PAGE + "?next=" + quote(scope.get("path", "/docs"), safe="/")

            async def to_login(send: Send) -> None:
                await send({"type": "http.response.start", "status": 303,
                            "headers": [(b"location", target.encode()), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})

            return to_login

        async def unauthorized(send: Send) -> None:
            await _reply(send, 401, "missing or wrong bearer token (Authorization: Bearer <one of "
                                    "http.api_tokens>), or log in to the inbox first",
                         headers={"www-authenticate": "Bearer"})

        return unauthorized


def _has_login(scope: Scope) -> bool:
    return any(getattr(route, "path", None) == LOGIN_PAGE for route in scope["app"].router.routes)


async def _reply(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
           *((k.encode(), v.encode()) for k, v in (headers or {}).items())]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
