"""A GitHub REST API as its public documentation describes the parts the bridge uses, on
127.0.0.1 (docs.github.com: "Authenticating as a GitHub App", "Generating an installation
access token", "Webhook events and payloads", "Validating webhook deliveries", "Workflow
runs", "Deployments", "Commits: compare two commits", "Rate limits for the REST API").

- App authentication: a JWT signed RS256 with the App's private key, `iss` = the app id,
  `iat`/`exp` at most 10 minutes apart; `POST /app/installations/{id}/access_tokens` sells
  an installation token (`expires_at` one hour later) for it. Everything else needs a valid
  installation or personal token (`Authorization: Bearer` or `token`), else 401.
- `POST /repos/{o}/{r}/actions/runs/{id}/deployment_protection_rule` with
  `{environment_name, state, comment}` is answered 204 only while the run waits on that
  environment's custom rule (422 otherwise); `reviews` records each decision.
- `GET /repos/{o}/{r}/actions/runs?status=waiting` and `.../pending_deployments`, and
  `POST .../pending_deployments` (`{environment_ids, state, comment}`) by a reviewer's token.
- `rate_limit(n, retry_after)` answers the next `n` API calls 429 with `Retry-After`.
- `webhook(event, payload)` builds what GitHub POSTs: the JSON body and its
  `X-GitHub-Event`, `X-GitHub-Delivery` and `X-Hub-Signature-256` headers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.engines.harness import FakeServer

APP_ID = 424242
INSTALLATION_ID = 77
WEBHOOK_SECRET = "whsec-github-test-0123456789abcdef"


@dataclass
class Run:
    id: int
    repo: str
    sha: str
    branch: str = "main"
    actor: str = "ana"
    name: str = "deploy"
    status: str = "waiting"
    #: environments waiting on the App's custom rule / on required reviewers: name → id
    gates: dict[str, int] = field(default_factory=dict)
    reviewers: dict[str, int] = field(default_factory=dict)

    def json(self, base: str) -> dict[str, Any]:
        user = {"login": self.actor, "id": 1000 + len(self.actor), "type": "User"}
        return {"id": self.id, "name": self.name, "status": self.status, "conclusion": None,
                "head_branch": self.branch, "head_sha": self.sha, "run_number": 7,
                "html_url": f"{base}/{self.repo}/actions/runs/{self.id}",
                "actor": user, "triggering_actor": user,
                "repository": {"full_name": self.repo}}


@dataclass
class Review:
    run_id: int
    environment: str
    state: str
    comment: str
    token: str


class FakeGitHub:
    def __init__(self) -> None:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.private_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()).decode()
        self.public_key = key.public_key()
        self.tokens: dict[str, int | None] = {}  # token → installation (None: a person's token)
        self.people_tokens: dict[str, str] = {}  # token → login
        self.tokens_sold = 0
        self.runs: dict[int, Run] = {}
        self.deployments: dict[str, list[dict[str, Any]]] = {}  # repo → newest first
        self.commits: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        self.reviews: list[Review] = []
        self.limited = 0
        self.retry_after = 1
        self.primary = False
        app = Starlette(routes=[
            Route("/app", self._app),
            Route("/app/installations/{iid:int}/access_tokens", self._access_token, methods=["POST"]),
            Route("/user", self._user),
            Route("/repos/{owner}/{repo}/actions/runs", self._runs),
            Route("/repos/{owner}/{repo}/actions/runs/{run_id:int}", self._run),
            Route("/repos/{owner}/{repo}/actions/runs/{run_id:int}/deployment_protection_rule",
                  self._gate, methods=["POST"]),
            Route("/repos/{owner}/{repo}/actions/runs/{run_id:int}/pending_deployments",
                  self._pending, methods=["GET", "POST"]),
            Route("/repos/{owner}/{repo}/deployments", self._deployments),
            Route("/repos/{owner}/{repo}/deployments/{did:int}/statuses", self._statuses),
            Route("/repos/{owner}/{repo}/compare/{basehead:path}", self._compare),
        ])
        self.server = FakeServer(app)

    @property
    def api_url(self) -> str:
        return self.server.url

    async def __aenter__(self) -> FakeGitHub:
        await self.server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop()

    # -- scenario ---------------------------------------------------------------------
    def person_token(self, login: str) -> str:
        token = f"ghp_{secrets.token_hex(16)}"
        self.people_tokens[token] = login
        self.tokens[token] = None
        return token

    def add_run(self, run: Run, *, deployed_before: str | None = None,
                commits: list[tuple[str, str]] | None = None) -> Run:
        """A run of `run.repo`; `deployed_before`: the sha last deployed with success to each
        of its environments, and `commits` ((author, message), ...) between it and run.sha."""
        self.runs[run.id] = run
        if deployed_before is not None:
            for env in {**run.gates, **run.reviewers}:
                self.deployments.setdefault(run.repo, []).append(
                    {"id": 9000 + len(self.deployments.get(run.repo, [])), "sha": deployed_before,
                     "environment": env, "state": "success"})
            self.commits[(run.repo, deployed_before, run.sha)] = [
                {"sha": hashlib.sha1(f"{i}{m}".encode()).hexdigest(), "author": {"login": a},
                 "commit": {"author": {"name": a.title()}, "message": f"{m}\n\nbody"}}
                for i, (a, m) in enumerate(commits or [])]
        return run

    def rate_limit(self, calls: int, retry_after: int = 1, *, primary: bool = False) -> None:
        """Refuse the next `calls`: a secondary limit (429 + Retry-After), or the primary one
        (403, `X-RateLimit-Remaining: 0` and `X-RateLimit-Reset`, no Retry-After)."""
        self.limited, self.retry_after, self.primary = calls, retry_after, primary

    def protection_rule_payload(self, run: Run, environment: str, *, callback_url: str | None = None,
                                deployment_id: int = 5150) -> dict[str, Any]:
        """A `deployment_protection_rule` webhook (action `requested`), as documented."""
        owner = run.repo.split("/")[0]
        return {
            "action": "requested", "environment": environment, "event": "workflow_dispatch",
            "sha": run.sha, "ref": f"refs/heads/{run.branch}",
            "deployment_callback_url": callback_url or
            f"{self.api_url}/repos/{run.repo}/actions/runs/{run.id}/deployment_protection_rule",
            "deployment": {"id": deployment_id, "sha": run.sha, "ref": run.branch, "environment": environment,
                           "creator": {"login": run.actor}, "task": "deploy"},
            "pull_requests": [],
            "repository": {"full_name": run.repo, "name": run.repo.split("/")[1], "owner": {"login": owner}},
            "organization": {"login": owner},
            "installation": {"id": INSTALLATION_ID},
            "sender": {"login": run.actor},
        }

    @staticmethod
    def webhook(event: str, payload: dict[str, Any], secret: str = WEBHOOK_SECRET) -> tuple[bytes, dict[str, str]]:
        body = json.dumps(payload).encode()
        signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return body, {"Content-Type": "application/json", "X-GitHub-Event": event,
                      "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": signature,
                      "User-Agent": "GitHub-Hookshot/fake"}

    # -- auth -------------------------------------------------------------------------
    def _jwt_ok(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        if not header.startswith("Bearer "):
            return False
        try:
            claims = jwt.decode(header[7:], self.public_key, algorithms=["RS256"], leeway=60,
                                options={"require": ["iat", "exp", "iss"]})
        except jwt.PyJWTError:
            return False
        return str(claims["iss"]) == str(APP_ID) and claims["exp"] - claims["iat"] <= 660

    def _token(self, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        for scheme in ("Bearer ", "token "):
            if header.startswith(scheme) and header[len(scheme):] in self.tokens:
                return header[len(scheme):]
        return None

    def _limit(self) -> Response | None:
        if self.limited > 0:
            self.limited -= 1
            if self.primary:
                return JSONResponse({"message": "API rate limit exceeded for installation ID 77."}, status_code=403,
                                    headers={"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0",
                                             "X-RateLimit-Reset": str(int(time.time()) + self.retry_after)})
            return JSONResponse({"message": "You have exceeded a secondary rate limit."}, status_code=429,
                                headers={"Retry-After": str(self.retry_after), "X-RateLimit-Remaining": "0",
                                         "X-RateLimit-Reset": str(int(time.time()) + self.retry_after)})
        return None

    @staticmethod
    def _unauthorized() -> Response:
        return JSONResponse({"message": "Bad credentials"}, status_code=401)

    async def _app(self, request: Request) -> Response:
        if not self._jwt_ok(request):
            return self._unauthorized()
        return JSONResponse({"id": APP_ID, "slug": "hitl-bridge-deploys", "name": "hitl-bridge deploys"})

    async def _access_token(self, request: Request) -> Response:
        if not self._jwt_ok(request):
            return self._unauthorized()
        if request.path_params["iid"] != INSTALLATION_ID:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        token = f"ghs_{secrets.token_hex(18)}"
        self.tokens[token] = INSTALLATION_ID
        self.tokens_sold += 1
        expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return JSONResponse({"token": token, "expires_at": expires, "permissions": {"actions": "write"},
                             "repository_selection": "all"}, status_code=201)

    async def _user(self, request: Request) -> Response:
        token = self._token(request)
        if token is None or token not in self.people_tokens:
            return self._unauthorized()
        return JSONResponse({"login": self.people_tokens[token], "id": 1})

    # -- runs -------------------------------------------------------------------------
    def _guard(self, request: Request) -> tuple[str | None, Response | None]:
        token = self._token(request)
        if token is None:
            return None, self._unauthorized()
        return token, self._limit()

    def _run_of(self, request: Request) -> Run | None:
        repo = f"{request.path_params['owner']}/{request.path_params['repo']}"
        run = self.runs.get(request.path_params["run_id"])
        return run if run is not None and run.repo == repo else None

    async def _runs(self, request: Request) -> Response:
        _, refused = self._guard(request)
        if refused:
            return refused
        repo = f"{request.path_params['owner']}/{request.path_params['repo']}"
        status = request.query_params.get("status")
        runs = [r.json(self.api_url) for r in self.runs.values()
                if r.repo == repo and (status is None or r.status == status)]
        return JSONResponse({"total_count": len(runs), "workflow_runs": runs})

    async def _run(self, request: Request) -> Response:
        _, refused = self._guard(request)
        if refused:
            return refused
        run = self._run_of(request)
        if run is None:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return JSONResponse(run.json(self.api_url))

    async def _gate(self, request: Request) -> Response:
        token, refused = self._guard(request)
        if refused:
            return refused
        if self.tokens.get(token or "") != INSTALLATION_ID:
            return JSONResponse({"message": "Resource not accessible by integration"}, status_code=403)
        run = self._run_of(request)
        body = await request.json()
        env = body.get("environment_name")
        if body.get("state") not in ("approved", "rejected") or not isinstance(env, str):
            return JSONResponse({"message": "Invalid request."}, status_code=422)
        if run is None or run.status != "waiting" or env not in run.gates:
            return JSONResponse({"message": "No pending deployment protection rule for this run"}, status_code=422)
        del run.gates[env]
        self.reviews.append(Review(run.id, env, body["state"], str(body.get("comment", "")), token or ""))
        if body["state"] == "rejected" or not run.gates:
            run.status = "in_progress" if body["state"] == "approved" else "completed"
        return Response(status_code=204)

    async def _pending(self, request: Request) -> Response:
        token, refused = self._guard(request)
        if refused:
            return refused
        run = self._run_of(request)
        if run is None:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        login = self.people_tokens.get(token or "")
        if request.method == "GET":
            return JSONResponse([
                {"environment": {"id": eid, "name": env}, "wait_timer": 0,
                 "current_user_can_approve": login is not None,
                 "reviewers": [{"type": "User", "reviewer": {"login": "reviewer"}}]}
                for env, eid in run.reviewers.items()])
        body = await request.json()
        ids = body.get("environment_ids")
        if body.get("state") not in ("approved", "rejected") or not isinstance(ids, list) or "comment" not in body:
            return JSONResponse({"message": "Invalid request."}, status_code=422)
        envs = [env for env, eid in run.reviewers.items() if eid in ids]
        if login is None or not envs:
            return JSONResponse({"message": "No pending deployments for these environments"}, status_code=422)
        for env in envs:
            del run.reviewers[env]
            self.reviews.append(Review(run.id, env, body["state"], str(body["comment"]), token or ""))
        return JSONResponse([{"id": 1, "environment": env} for env in envs])

    # -- deployments and commits ------------------------------------------------------
    async def _deployments(self, request: Request) -> Response:
        _, refused = self._guard(request)
        if refused:
            return refused
        repo = f"{request.path_params['owner']}/{request.path_params['repo']}"
        env = request.query_params.get("environment")
        found = [{k: v for k, v in d.items() if k != "state"} for d in self.deployments.get(repo, [])
                 if env is None or d["environment"] == env]
        return JSONResponse(found)

    async def _statuses(self, request: Request) -> Response:
        _, refused = self._guard(request)
        if refused:
            return refused
        repo = f"{request.path_params['owner']}/{request.path_params['repo']}"
        found = [d for d in self.deployments.get(repo, []) if d["id"] == request.path_params["did"]]
        return JSONResponse([{"id": 1, "state": d["state"]} for d in found])

    async def _compare(self, request: Request) -> Response:
        _, refused = self._guard(request)
        if refused:
            return refused
        repo = f"{request.path_params['owner']}/{request.path_params['repo']}"
        base, _, head = request.path_params["basehead"].partition("...")
        commits = self.commits.get((repo, base, head))
        if commits is None:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return JSONResponse({"status": "ahead", "ahead_by": len(commits), "total_commits": len(commits),
                             "html_url": f"{self.api_url}/{repo}/compare/{base[:7]}...{head[:7]}",
                             "commits": commits})
