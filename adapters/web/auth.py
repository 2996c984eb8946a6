"""Who is looking at the inbox: open on loopback, else a login (password or token) kept in a
signed HttpOnly session cookie; every form carries a CSRF token bound to a per-browser cookie.

Cookies are signed with HMAC-SHA256 (stdlib); nothing secret is stored in them, and a
session secret never leaves the process.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections import defaultdict, deque
from dataclasses import dataclass

from starlette.requests import Request

from adapters.web.settings import WebConfig
from bridge.people import LOCAL, SHARED_PASSWORD

SESSION_COOKIE = "hitl_session"
CSRF_COOKIE = "hitl_csrf"
COOKIE_PATH = "/inbox"
LOCAL_IDENTITY = LOCAL
_FAILURE_WINDOW_S = 300.0
_MAX_TRACKED_CLIENTS = 10_000


class LoginRefused(Exception):
    """Wrong password/token, or too many failures from one address."""

    def __init__(self, message: str, *, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Viewer:
    """Who is acting in the inbox, recorded as the responder `<platform>:<identity>`:
    `web:<name>` for a personal inbox token, `api:<name>` for an API token, `web:local` on
    an open inbox, and `web:shared-password` for everyone who used the shared password
    (whatever name they typed: one identity for quorum)."""

    identity: str
    how: str  # "open" | "session" | "bearer"
    name: str = ""  # shown; for the shared password, the name that was typed
    platform: str = "web"

    @property
    def display(self) -> str:
        return self.name or self.identity

    @property
    def shared(self) -> bool:
        return self.identity == SHARED_PASSWORD

    @property
    def handle(self) -> str:
        return f"{self.platform}:{self.identity}"


class InboxAuth:
    """Login, sessions and CSRF for the inbox. `open` when nobody configured any credential
    and the bridge listens on loopback only."""

    def __init__(self, config: WebConfig, *, api_tokens: dict[str, str], loopback_only: bool,
                 base_secret: str | None) -> None:
        self.password = config.password.get_secret_value() if config.password else None
        self.tokens: dict[str, str] = {name: t.get_secret_value() for name, t in config.tokens.items()}
        self.api_tokens = dict(api_tokens)  # an API token also opens the inbox, as `api:<name>`
        self.open = not self.password and not self.tokens and not self.api_tokens and loopback_only
        self.ttl_s = config.session_ttl_s
        self.max_failures = config.max_login_failures
        self._key = _signing_key(config, base_secret, self.password, self.tokens, self.api_tokens)
        self._failures: dict[str, deque[float]] = defaultdict(deque)

    # credentials --------------------------------------------------------------------------
    @property
    def accepts_password(self) -> bool:
        return self.password is not None

    def check_login(self, client: str, name: str, secret: str) -> Viewer:
        """Return who logs in with a correct token, or the password (with a name); else raise."""
        self._throttle(client)
        viewer = self.token_viewer(secret, "session")
        if viewer is None and self.password is not None and _equal(secret, self.password):
            if not name:
                raise LoginRefused("enter your name (it is shown with your answers)", status=400)
            viewer = Viewer(SHARED_PASSWORD, "session", name=name)
        if viewer is None:
            self._record_failure(client)
            raise LoginRefused("wrong password or token")
        self._failures.pop(client, None)
        return viewer

    def token_viewer(self, given: str, how: str) -> Viewer | None:
        """Who a token belongs to (a personal inbox token, then an API token); every token
        is compared in constant time with no early exit."""
        found: Viewer | None = None
        for platform, tokens in (("web", self.tokens), ("api", self.api_tokens)):
            for name, token in tokens.items():
                if _equal(given, token) and found is None:
                    found = Viewer(name, how, name=name, platform=platform)
        return found

    def _record_failure(self, client: str) -> None:
        if len(self._failures) >= _MAX_TRACKED_CLIENTS:  # many addresses: forget the stale ones
            cutoff = time.monotonic() - _FAILURE_WINDOW_S
            for stale in [c for c, f in self._failures.items() if not f or f[-1] < cutoff]:
                del self._failures[stale]
            if len(self._failures) >= _MAX_TRACKED_CLIENTS:
                self._failures.clear()
        self._failures[client].append(time.monotonic())

    def _throttle(self, client: str) -> None:
        failures = self._failures[client]
        cutoff = time.monotonic() - _FAILURE_WINDOW_S
        while failures and failures[0] < cutoff:
            failures.popleft()
        if len(failures) >= self.max_failures:
            raise LoginRefused("too many failed logins from this address; wait a few minutes", status=429)
        if not failures:
            self._failures.pop(client, None)

    # sessions -----------------------------------------------------------------------------
    def new_session(self, viewer: Viewer) -> str:
        payload = {"u": viewer.identity, "p": viewer.platform, "d": viewer.name,
                   "exp": int(time.time()) + self.ttl_s, "n": secrets.token_urlsafe(8)}
        body = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")
        return f"v1.{body}.{self._sign('session:' + body)}"

    def read_session(self, cookie: str | None) -> Viewer | None:
        """Who a valid, unexpired session cookie belongs to; None for anything else."""
        if not cookie or len(cookie) > 4096:
            return None
        parts = cookie.split(".")
        if len(parts) != 3 or parts[0] != "v1":
            return None
        _, body, signature = parts
        if not hmac.compare_digest(signature, self._sign("session:" + body)):
            return None
        try:
            payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except (ValueError, TypeError):
            return None
        if not isinstance(payload, dict) or not isinstance(payload.get("u"), str):
            return None
        exp = payload.get("exp")
        if not isinstance(exp, int) or exp < time.time():
            return None
        platform, name = payload.get("p", "web"), payload.get("d", "")
        if platform not in ("web", "api") or not isinstance(name, str):
            return None
        return Viewer(payload["u"], "session", name=name or payload["u"], platform=platform)

    def viewer(self, request: Request) -> Viewer | None:
        """Who sent `request`, or None when a login is needed."""
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            return self.token_viewer(header[7:].strip(), "bearer")
        session = self.read_session(request.cookies.get(SESSION_COOKIE))
        if session is not None:
            return session
        if self.open:
            return Viewer(LOCAL_IDENTITY, "open", name=LOCAL_IDENTITY)
        return None

    # CSRF ---------------------------------------------------------------------------------
    @staticmethod
    def new_browser_id() -> str:
        return secrets.token_urlsafe(24)

    def csrf_token(self, browser_id: str) -> str:
        return self._sign("csrf:" + browser_id)

    def csrf_ok(self, request: Request, viewer: Viewer | None, given: str | None) -> bool:
        """Bearer requests carry no ambient credential; everything else needs the form token
        matching this browser's cookie, and no foreign Origin."""
        if viewer is not None and viewer.how == "bearer":
            return True
        if not same_origin(request):
            return False
        browser_id = request.cookies.get(CSRF_COOKIE)
        if not browser_id or not given or len(given) > 200:
            return False
        return hmac.compare_digest(given, self.csrf_token(browser_id))

    def _sign(self, text: str) -> str:
        return hmac.new(self._key, text.encode(), hashlib.sha256).hexdigest()


def same_origin(request: Request) -> bool:
    """False when the browser says the request came from another site."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


def _equal(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def _signing_key(config: WebConfig, base_secret: str | None, password: str | None,
                 tokens: dict[str, str], api_tokens: dict[str, str]) -> bytes:
    """Per config: changing the password or a token ends every session."""
    if config.session_secret is not None:
        base = config.session_secret.get_secret_value().encode()
    elif base_secret:
        base = hashlib.sha256(b"hitl-bridge web session\0" + base_secret.encode()).digest()
    else:
        base = secrets.token_bytes(32)  # sessions end when the daemon restarts
    credentials = json.dumps([password, sorted(tokens.items()), sorted(api_tokens.items())]).encode()
    return hmac.new(base, credentials, hashlib.sha256).digest()
