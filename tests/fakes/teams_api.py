"""A fake of Microsoft's side of a Teams bot, on 127.0.0.1, written from the public docs
(Bot Framework REST API, "Authentication with the Bot Connector API"):

- the login endpoint's client-credentials token (`POST /<tenant>/oauth2/v2.0/token`);
- Bot Framework's OpenID metadata and signing keys (`/v1/.well-known/openidconfiguration`,
  `/v1/.well-known/keys`), whose private key signs the activities the test sends;
- the Bot Connector (`/v3/conversations…`): create a conversation, post, reply, update,
  list members — every call needs the issued token; `throttle(n)` answers the next n
  calls 429 with Retry-After.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

APP_ID = "11111111-2222-3333-4444-555555555555"
APP_PASSWORD = "fake-client-secret"
TENANT = "99999999-8888-7777-6666-555555555555"
ISSUER = "https://api.botframework.com"


@dataclass
class Activity:
    conversation_id: str
    id: str
    body: dict[str, Any]
    reply_to: str | None = None
    versions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def card(self) -> dict[str, Any]:
        return dict(self.body["attachments"][0]["content"])


class FakeTeams:
    """`async with FakeTeams() as fake:`; state is inspectable."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "fake-key-1"
        self.tokens: set[str] = set()
        self.activities: dict[str, Activity] = {}
        self.conversations: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.token_requests = 0
        self.refuse_credentials = False
        self._throttle = 0
        self.retry_after = "0"
        self.throttled = 0
        self._ids = itertools.count(1)
        #: calls per second the Bot Connector takes before answering 429 (None: no limit)
        self.rate_limit: float | None = None
        self._recent: list[float] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    # test controls --------------------------------------------------------------------------------
    def throttle(self, calls: int, retry_after: str = "0") -> None:
        self._throttle, self.retry_after = calls, retry_after

    @property
    def service_url(self) -> str:
        return f"{self.url}/teams/"

    def section(self, **extra: Any) -> dict[str, Any]:
        """The daemon's `teams:` section pointing at this fake."""
        return {"app_id": APP_ID, "app_password": APP_PASSWORD, "tenant_id": TENANT,
                "login_endpoint": self.url, "openid_metadata_url": f"{self.url}/v1/.well-known/openidconfiguration",
                "token_issuer": ISSUER, "backoff_s": 0.01, **extra}

    def sign(self, claims: dict[str, Any], *, key: rsa.RSAPrivateKey | None = None, kid: str | None = None) -> str:
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": kid or self.kid})

    def activity_token(self, service_url: str | None = None, **overrides: Any) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": APP_ID, "serviceurl": service_url or self.service_url,
                  "nbf": now - 10, "iat": now - 10, "exp": now + 3600, **overrides}
        return self.sign({k: v for k, v in claims.items() if v is not None})

    def in_conversation(self, conversation_id: str) -> list[Activity]:
        return [a for a in self.activities.values() if a.conversation_id == conversation_id and a.reply_to is None]

    def replies(self, activity_id: str) -> list[Activity]:
        return [a for a in self.activities.values() if a.reply_to == activity_id]

    # server ---------------------------------------------------------------------------------------
    async def __aenter__(self) -> FakeTeams:
        app = web.Application(client_max_size=4_000_000)
        app.router.add_post("/{tenant}/oauth2/v2.0/token", self._token)
        app.router.add_get("/v1/.well-known/openidconfiguration", self._openid)
        app.router.add_get("/v1/.well-known/keys", self._keys)
        app.router.add_post("/teams/v3/conversations", self._create_conversation)
        app.router.add_post("/teams/v3/conversations/{cid}/activities", self._post)
        app.router.add_post("/teams/v3/conversations/{cid}/activities/{aid}", self._post)
        app.router.add_put("/teams/v3/conversations/{cid}/activities/{aid}", self._update)
        app.router.add_get("/teams/v3/conversations/{cid}/members", self._members)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _token(self, request: web.Request) -> web.Response:
        self.token_requests += 1
        form = await request.post()
        if self.refuse_credentials or form.get("client_id") != APP_ID or form.get("client_secret") != APP_PASSWORD \
                or form.get("grant_type") != "client_credentials":
            return web.json_response({"error": "invalid_client",
                                      "error_description": "AADSTS7000215: Invalid client secret provided."},
                                     status=401)
        token = f"bot-token-{uuid.uuid4().hex}"
        self.tokens.add(token)
        return web.json_response({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
                                  "access_token": token})

    async def _openid(self, request: web.Request) -> web.Response:
        return web.json_response({"issuer": ISSUER, "jwks_uri": f"{self.url}/v1/.well-known/keys",
                                  "id_token_signing_alg_values_supported": ["RS256"]})

    async def _keys(self, request: web.Request) -> web.Response:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return web.json_response({"keys": [{**jwk, "kid": self.kid, "use": "sig", "endorsements": ["msteams"]}]})

    def _gate(self, request: web.Request) -> web.Response | None:
        self.calls.append((request.method, request.path))
        if request.headers.get("Authorization", "").removeprefix("Bearer ") not in self.tokens:
            return web.json_response({"error": {"code": "Unauthorized", "message": "bad token"}}, status=401)
        if self.rate_limit is not None:
            now = time.monotonic()
            self._recent = [t for t in self._recent if now - t < 1.0]
            if len(self._recent) >= self.rate_limit:
                self.throttled += 1
                wait = 1.0 - (now - self._recent[0])
                return web.json_response({"error": {"code": "TooManyRequests"}}, status=429,
                                         headers={"Retry-After": str(max(1, round(wait)))})
            self._recent.append(now)
        if self._throttle > 0:
            self._throttle -= 1
            self.throttled += 1
            return web.json_response({"error": {"code": "TooManyRequests"}}, status=429,
                                     headers={"Retry-After": self.retry_after})
        return None

    async def _create_conversation(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        body = await request.json()
        members = body.get("members") or []
        if len(members) != 1 or not members[0].get("id"):
            return web.json_response({"error": {"code": "BadArgument"}}, status=400)
        cid = f"a:personal-{members[0]['id']}"
        self.conversations[cid] = {"members": members, "tenant": body.get("tenantId")}
        return web.json_response({"id": cid})

    async def _post(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        body = await request.json()
        aid = f"act-{next(self._ids)}"
        reply_to = request.match_info.get("aid") or body.get("replyToId")
        self.activities[aid] = Activity(request.match_info["cid"], aid, body, reply_to=reply_to)
        return web.json_response({"id": aid})

    async def _update(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        activity = self.activities.get(request.match_info["aid"])
        if activity is None:
            return web.json_response({"error": {"code": "NotFound"}}, status=404)
        activity.versions.append(activity.body)
        activity.body = await request.json()
        return web.json_response({"id": activity.id})

    async def _members(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        return web.json_response([{"id": "29:ana", "name": "Ana"}, {"id": "28:bot", "name": "bot"}])
