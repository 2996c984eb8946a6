"""A GitLab REST API (v4) as its public documentation describes the parts the bridge uses,
on 127.0.0.1 (docs.gitlab.com: "Deployments API", "Deployment approvals", "Repositories
API: compare branches, tags or commits", "Webhook events", "Rate limits").

- Every call needs a `PRIVATE-TOKEN` of a known user, else 401.
- A project is named by its id or its URL-encoded path (`acme%2Fpayments`).
- `GET /projects/:id/deployments` filters on `status`, `environment`, sorts on `order_by`
  / `sort`; a deployment blocked on approval has status `blocked` and an
  `approval_summary` whose rules say `required_approvals`.
- `POST /projects/:id/deployments/:deployment_id/approval` (`status` approved|rejected,
  `comment`): one approval per user (a second: 400), none by the user who triggered the
  deployment (400), only while blocked (400). A rejection ends the deployment (`canceled`
  here); enough approvals unblock it (`created`).
- `rate_limit(n, retry_after)` answers the next `n` calls 429 with `Retry-After` and the
  `RateLimit-*` headers.
- `hook(event, project)` builds what GitLab POSTs to a project webhook (`X-Gitlab-Event`,
  `X-Gitlab-Token`).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.engines.harness import FakeServer

HOOK_SECRET = "gitlab-hook-secret-0123456789"


@dataclass
class Deployment:
    id: int
    project: str
    environment: str
    sha: str
    user: str
    status: str = "blocked"
    ref: str = "main"
    required: int = 1
    approvals: list[dict[str, Any]] = field(default_factory=list)

    def json(self, base: str) -> dict[str, Any]:
        return {
            "id": self.id, "iid": self.id, "ref": self.ref, "sha": self.sha, "status": self.status,
            "created_at": "2026-11-27T02:00:00.000Z",
            "user": {"id": 1, "username": self.user, "name": self.user.title(), "state": "active"},
            "environment": {"id": 5, "name": self.environment, "external_url": None},
            "deployable": {"id": 700 + self.id, "name": "deploy", "status": "manual",
                           "web_url": f"{base}/{self.project}/-/jobs/{700 + self.id}",
                           "pipeline": {"id": 300 + self.id,
                                        "web_url": f"{base}/{self.project}/-/pipelines/{300 + self.id}"}},
            "pending_approval_count": max(self.required - self.approved_count, 0),
            "approvals": self.approvals,
            "approval_summary": {"rules": [{"user_id": None, "group_id": None, "access_level": 40,
                                            "access_level_description": "Maintainers",
                                            "required_approvals": self.required,
                                            "deployment_approvals": self.approvals}]},
        }

    @property
    def approved_count(self) -> int:
        return sum(1 for a in self.approvals if a["status"] == "approved")


class FakeGitLab:
    def __init__(self) -> None:
        self.users: dict[str, str] = {}  # token → username
        self.deployments: dict[int, Deployment] = {}
        self.commits: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
        self.limited = 0
        self.retry_after = 1
        self.bot_token = self.token_for("hitl-bot")
        app = Starlette(routes=[
            Route("/api/v4/user", self._user),
            Route("/api/v4/projects/{pid:path}/deployments/{did:int}/approval", self._approval, methods=["POST"]),
            Route("/api/v4/projects/{pid:path}/deployments/{did:int}", self._deployment),
            Route("/api/v4/projects/{pid:path}/deployments", self._deployments),
            Route("/api/v4/projects/{pid:path}/repository/compare", self._compare),
        ])
        self.server = FakeServer(app)

    @property
    def url(self) -> str:
        return self.server.url

    async def __aenter__(self) -> FakeGitLab:
        await self.server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop()

    # -- scenario ---------------------------------------------------------------------
    def token_for(self, username: str) -> str:
        token = f"glpat-{secrets.token_hex(10)}"
        self.users[token] = username
        return token

    def add(self, deployment: Deployment, *, deployed_before: str | None = None,
            commits: list[tuple[str, str]] | None = None) -> Deployment:
        self.deployments[deployment.id] = deployment
        if deployed_before is not None:
            earlier = Deployment(deployment.id - 1000, deployment.project, deployment.environment,
                                 deployed_before, "someone", status="success")
            self.deployments[earlier.id] = earlier
            self.commits[(deployment.project, deployed_before, deployment.sha)] = commits or []
        return deployment

    def rate_limit(self, calls: int, retry_after: int = 1) -> None:
        self.limited, self.retry_after = calls, retry_after

    @staticmethod
    def hook(event: str, project: str, token: str = HOOK_SECRET, **extra: Any) -> tuple[bytes, dict[str, str]]:
        kind = {"Job Hook": "build", "Deployment Hook": "deployment"}.get(event, "unknown")
        body = json.dumps({"object_kind": kind, "project": {"id": 42, "path_with_namespace": project}, **extra})
        return body.encode(), {"Content-Type": "application/json", "X-Gitlab-Event": event,
                               "X-Gitlab-Token": token, "User-Agent": "GitLab/fake"}

    # -- helpers ----------------------------------------------------------------------
    def _guard(self, request: Request) -> tuple[str | None, Response | None]:
        user = self.users.get(request.headers.get("private-token", ""))
        if user is None:
            return None, JSONResponse({"message": "401 Unauthorized"}, status_code=401)
        if self.limited > 0:
            self.limited -= 1
            reset = int(time.time()) + self.retry_after
            return user, JSONResponse({"message": "Retry later"}, status_code=429, headers={
                "Retry-After": str(self.retry_after), "RateLimit-Limit": "600", "RateLimit-Remaining": "0",
                "RateLimit-Reset": str(reset)})
        return user, None

    @staticmethod
    def _project(request: Request) -> str:
        return unquote(request.path_params["pid"])

    # -- routes -----------------------------------------------------------------------
    async def _user(self, request: Request) -> Response:
        user, refused = self._guard(request)
        return refused or JSONResponse({"id": 1, "username": user})

    async def _deployments(self, request: Request) -> Response:
        _, refused = self._guard(request)
        if refused:
            return refused
        project, query = self._project(request), request.query_params
        found = [d for d in self.deployments.values() if d.project == project
                 and (not query.get("status") or d.status == query["status"])
                 and (not query.get("environment") or d.environment == query["environment"])]
        found.sort(key=lambda d: d.id, reverse=query.get("sort") == "desc")
        found = found[: int(query.get("per_page", 20))]
        return JSONResponse([d.json(self.url) for d in found])

    async def _deployment(self, request: Request) -> Response:
        _, refused = self._guard(request)
        if refused:
            return refused
        found = self.deployments.get(request.path_params["did"])
        if found is None or found.project != self._project(request):
            return JSONResponse({"message": "404 Not found"}, status_code=404)
        return JSONResponse(found.json(self.url))

    async def _approval(self, request: Request) -> Response:
        user, refused = self._guard(request)
        if refused:
            return refused
        found = self.deployments.get(request.path_params["did"])
        if found is None or found.project != self._project(request):
            return JSONResponse({"message": "404 Not found"}, status_code=404)
        form = await request.json() if "json" in request.headers.get("content-type", "") else dict(await request.form())
        status = form.get("status")
        if status not in ("approved", "rejected"):
            return JSONResponse({"error": "status does not have a valid value"}, status_code=400)
        if found.status != "blocked":
            return JSONResponse({"message": "Deployment is not blocked"}, status_code=400)
        if user == found.user:
            return JSONResponse({"message": "You cannot approve your own deployment."}, status_code=400)
        if any(a["user"]["username"] == user for a in found.approvals):
            return JSONResponse({"message": "You have already approved this deployment"}, status_code=400)
        approval = {"user": {"username": user}, "status": status, "comment": str(form.get("comment", "")),
                    "created_at": "2026-11-27T02:10:00.000Z"}
        found.approvals.append(approval)
        if status == "rejected":
            found.status = "canceled"
        elif found.approved_count >= found.required:
            found.status = "created"
        return JSONResponse(approval, status_code=201)

    async def _compare(self, request: Request) -> Response:
        _, refused = self._guard(request)
        if refused:
            return refused
        key = (self._project(request), request.query_params.get("from", ""), request.query_params.get("to", ""))
        commits = self.commits.get(key)
        if commits is None:
            return JSONResponse({"message": "404 Ref Not Found"}, status_code=404)
        return JSONResponse({
            "commit": None, "compare_timeout": False, "compare_same_ref": False,
            "web_url": f"{self.url}/{key[0]}/-/compare/{key[1][:8]}...{key[2][:8]}",
            "commits": [{"id": hashlib.sha1(f"{i}{m}".encode()).hexdigest(), "title": m, "author_name": a}
                        for i, (a, m) in enumerate(commits)],
        })
