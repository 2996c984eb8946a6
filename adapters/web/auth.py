"""Who is looking at the inbox: open on loopback, else a login (password or token) kept as a
session in the store (`bridge.http.sessions`: the HttpOnly cookie holds only a random id,
so logging out ends it on every replica); every form carries a CSRF token bound to a
per-browser cookie. Failed logins are throttled per client address and per name typed
(`adapters.web.login_throttle`: a name's budget never locks it out of an address it logged in from).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from starlette.requests import Request

from adapters.web.login_throttle import LoginThrottle
from adapters.web.settings import WebConfig
from adapters.web.spec import SHARED_PASSWORD
from bridge.crypto import derive_key
from bridge.http.sessions import NAMESPACE, SESSION_COOKIE, Sessions
from bridge.people import LOCAL
from bridge.store.base import Store

CSRF_COOKIE = "hitl_csrf"
COOKIE_PATH = "/inbox"
SESSION_PATH = "/"  # the session also opens /docs and /openapi.json (bridge.http.auth)
LOCAL_IDENTITY = LOCAL
_FAILURE_WINDOW_S = 300.0


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
        self._throttle = LoginThrottle(config.max_login_failures, _FAILURE_WINDOW_S, self._key)
        self._sessions: Sessions | None = None

    async def attach(self, store: Store) -> None:
        """Keep sessions in `store`, and end the ones of other credentials (a changed password
        or token list, or a restart without `session_secret`/`secrets.key`)."""
        self._sessions = Sessions(store, scope=self._sign("session-scope"))
        self._throttle.attach(store)
        live = {key for key, _ in await store.kv_items(NAMESPACE, now=datetime.now(UTC))}
        for key, row in await store.kv_items(NAMESPACE):
            if key not in live or row.get("scope") != self._sessions.scope:
                await store.kv_delete(NAMESPACE, key)  # expired, or of other credentials

    # credentials --------------------------------------------------------------------------
    @property
    def accepts_password(self) -> bool:
        return self.password is not None

    async def check_login(self, client: str, name: str, secret: str) -> Viewer:
        """Who logs in with a correct token, or the password (with a name); else raise. An
        address that failed too often is refused even a right one; so is a name that failed
        too often, from an address it has not logged in from before (`login_throttle`)."""
        refusal = await self._throttle.refusal(client, name)
        if refusal is not None:
            raise LoginRefused(refusal, status=429)
        viewer = self.token_viewer(secret, "session")
        if viewer is None and self.password is not None and _equal(secret, self.password):
            if not name:
                raise LoginRefused("enter your name (it is shown with your answers)", status=400)
            viewer = Viewer(SHARED_PASSWORD, "session", name=name)
        if viewer is None:
            self._throttle.failed(client, name)
            raise LoginRefused("wrong password or token")
        await self._throttle.succeeded(client, name)
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

    # sessions -----------------------------------------------------------------------------
    def _store_sessions(self) -> Sessions:
        if self._sessions is None:
            raise RuntimeError("the inbox is not started (InboxAuth.attach)")
        return self._sessions

    async def new_session(self, viewer: Viewer) -> str:
        """Start a session; returns the cookie value (a random id, nothing else)."""
        return await self._store_sessions().start(viewer.identity, self.ttl_s, p=viewer.platform, d=viewer.name)

    async def read_session(self, cookie: str | None) -> Viewer | None:
        """Who a live session of these credentials belongs to; None for anything else."""
        if not cookie or self._sessions is None:
            return None
        row = await self._sessions.read(cookie)
        if row is None:
            return None
        identity, platform, name = str(row["u"]), row.get("p", "web"), row.get("d", "")
        if platform not in ("web", "api") or not isinstance(name, str):
            return None
        return Viewer(identity, "session", name=name or identity, platform=str(platform))

    async def end_session(self, cookie: str | None) -> None:
        """Log out: the session is gone from the store, so this cookie (or a copy) is dead."""
        if cookie and self._sessions is not None:
            await self._sessions.end(cookie)

    async def viewer(self, request: Request) -> Viewer | None:
        """Who sent `request`, or None when a login is needed."""
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            return self.token_viewer(header[7:].strip(), "bearer")
        session = await self.read_session(request.cookies.get(SESSION_COOKIE))
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
    """Per config: changing the password or a token ends every session. The base goes
    through scrypt: CSRF tokens are visible to anyone who loads a page, and must not let
    them test guesses of `secrets.key` offline at the speed of SHA-256."""
    if config.session_secret is not None:
        base = derive_key(config.session_secret.get_secret_value(), b"hitl-bridge web session secret")
    elif base_secret:
        base = derive_key(base_secret, b"hitl-bridge web session")
    else:
        base = secrets.token_bytes(32)  # sessions end when the daemon restarts
    credentials = json.dumps([password, sorted(tokens.items()), sorted(api_tokens.items())]).encode()
    return hmac.new(base, credentials, hashlib.sha256).digest()
