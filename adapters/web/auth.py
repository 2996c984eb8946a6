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

SESSION_COOKIE = "hitl_session"
CSRF_COOKIE = "hitl_csrf"
COOKIE_PATH = "/inbox"
LOCAL_IDENTITY = "local"
_FAILURE_WINDOW_S = 300.0
_MAX_TRACKED_CLIENTS = 10_000


class LoginRefused(Exception):
    """Wrong password/token, or too many failures from one address."""

    def __init__(self, message: str, *, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Viewer:
    """Who is acting in the inbox (recorded as the responder `web:<identity>`)."""

    identity: str
    how: str  # "open" | "session" | "bearer"


class InboxAuth:
    """Login, sessions and CSRF for the inbox. `open` when nobody configured any credential
    and the bridge listens on loopback only."""

    def __init__(self, config: WebConfig, *, api_tokens: dict[str, str], loopback_only: bool,
                 base_secret: str | None) -> None:
        self.password = config.password.get_secret_value() if config.password else None
        self.tokens: dict[str, str] = {name: t.get_secret_value() for name, t in config.tokens.items()}
        for name, token in api_tokens.items():  # an API token also opens the inbox, as its name
            self.tokens.setdefault(name, token)
        self.open = not self.password and not self.tokens and loopback_only
        self.ttl_s = config.session_ttl_s
        self.max_failures = config.max_login_failures
        self._key = _signing_key(config, base_secret, self.password, self.tokens)
        self._failures: dict[str, deque[float]] = defaultdict(deque)

    # credentials --------------------------------------------------------------------------
    @property
    def accepts_password(self) -> bool:
        return self.password is not None

    def check_login(self, client: str, name: str, secret: str) -> str:
        """Return the identity for a correct password (with a name) or token; else raise."""
        self._throttle(client)
        identity = self.token_identity(secret)
        if identity is None and self.password is not None and _equal(secret, self.password):
            if not name:
                raise LoginRefused("enter your name (it is recorded with your answers)", status=400)
            identity = name
        if identity is None:
            self._record_failure(client)
            raise LoginRefused("wrong password or token")
        self._failures.pop(client, None)
        return identity

    def token_identity(self, given: str) -> str | None:
        """The name a token belongs to; every token is compared (constant time, no early exit)."""
        found = None
        for name, token in self.tokens.items():
            if _equal(given, token) and found is None:
                found = name
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
    def new_session(self, identity: str) -> str:
        payload = {"u": identity, "exp": int(time.time()) + self.ttl_s, "n": secrets.token_urlsafe(8)}
        body = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")
        return f"v1.{body}.{self._sign('session:' + body)}"

    def read_session(self, cookie: str | None) -> str | None:
        """The identity in a valid, unexpired session cookie; None for anything else."""
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
        identity: str = payload["u"]
        return identity

    def viewer(self, request: Request) -> Viewer | None:
        """Who sent `request`, or None when a login is needed."""
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            identity = self.token_identity(header[7:].strip())
            return Viewer(identity, "bearer") if identity else None
        identity = self.read_session(request.cookies.get(SESSION_COOKIE))
        if identity is not None:
            return Viewer(identity, "session")
        if self.open:
            return Viewer(LOCAL_IDENTITY, "open")
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
                 tokens: dict[str, str]) -> bytes:
    """Per config: changing the password or a token ends every session."""
    if config.session_secret is not None:
        base = config.session_secret.get_secret_value().encode()
    elif base_secret:
        base = hashlib.sha256(b"hitl-bridge web session\0" + base_secret.encode()).digest()
    else:
        base = secrets.token_bytes(32)  # sessions end when the daemon restarts
    credentials = json.dumps([password, sorted(tokens.items())]).encode()
    return hmac.new(base, credentials, hashlib.sha256).digest()
