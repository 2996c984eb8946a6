"""The GitLab source: deployments blocked on approval in protected environments become
bridge requests, and the bridge's decision is given through the deployment approval API.

GitLab sends no deployment hook when a deployment becomes `blocked`, so the source polls
`GET /projects/:id/deployments?status=blocked` every `poll_every`; a project webhook (job
or deployment events, checked by `X-Gitlab-Token`) only makes that look happen at once. A
deployment no longer blocked (approved or rejected in GitLab, its pipeline cancelled)
withdraws its request.

GitLab counts one approval per GitLab user, so one token cannot meet a rule that needs
two. The label `approvals` says how many the deployment needs (routes give that quorum);
each approving person with a token in `approver_tokens` approves as themself, and the
bridge's own token approves once for the others. A deployment still blocked after that is
reported (the rule needs people the bridge has no token for) instead of left unsaid.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from adapters.deploy_source import DeploySource
from adapters.deploys import Decision, Deploy, decision_of, deploy_request
from adapters.gitlab.client import GitLabClient, GitLabUnavailable
from adapters.gitlab.settings import GitLabConfig
from bridge.doctor import Finding, fail, ok
from bridge.ports import DeliveryError, Outcome, RequestSink
from bridge.store.base import Store


def external_id(project: str, deployment_id: int) -> str:
    return f"gitlab:{project.lower()}:{deployment_id}"


def approvals_required(deployment: dict[str, Any]) -> int:
    """How many approvals the deployment's environment asks for (1 when it does not say)."""
    summary = deployment.get("approval_summary") if isinstance(deployment.get("approval_summary"), dict) else {}
    rules = [r for r in (summary or {}).get("rules") or [] if isinstance(r, dict)]
    counted = sum(int(r.get("required_approvals") or 0) for r in rules if isinstance(r.get("required_approvals"), int))
    return max(counted, 1)


def _decided_by(deployment: dict[str, Any], request_id: str) -> bool:
    """The deployment carries an approval or rejection this request gave (its id is in the comment)."""
    approvals = deployment.get("approvals")
    return any(isinstance(a, dict) and request_id in str(a.get("comment") or "")
               for a in approvals if isinstance(approvals, list)) if isinstance(approvals, list) else False


class GitLabSource(DeploySource):
    """Source port for GitLab deployment approvals."""

    platform = "GitLab"
    signature = "X-Gitlab-Token"

    def __init__(self, config: GitLabConfig, store: Store | None = None) -> None:
        super().__init__(config.name, store)
        self.config = config
        self.client = GitLabClient(config)
        self._looking = asyncio.Lock()

    # -- the port ---------------------------------------------------------------------
    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        self.sink = sink
        if self.config.webhook_secret is None:
            return []
        return [Route(f"/v1/sources/{self.name}/webhook", self._webhook, methods=["POST"])]

    async def run(self, sink: RequestSink) -> None:
        await self.poll_forever(sink, self.config.poll_every)

    async def deliver(self, outcome: Outcome) -> None:
        decision = decision_of(outcome)
        if decision is None:
            return
        ref = outcome.request.source_ref
        try:
            project, deployment_id = str(ref["project"]), int(ref["deployment_id"])
        except (KeyError, TypeError, ValueError):
            raise DeliveryError("the request carries no GitLab reference", permanent=True) from None
        try:
            current = await self.client.deployment(project, deployment_id)
            if current is None or current.get("status") != "blocked":
                if current is not None and _decided_by(current, outcome.request.id):
                    return  # an earlier attempt landed; only its reply was lost
                state = (current or {}).get("status", "gone")
                raise DeliveryError(f"the deployment is no longer blocked in GitLab ({state})", permanent=True)
            await self._decide(outcome, project, deployment_id, decision)
            after = await self.client.deployment(project, deployment_id)
        except GitLabUnavailable as exc:
            permanent = exc.status is not None and 400 <= exc.status < 500 and exc.status not in (408, 429)
            raise DeliveryError(str(exc), permanent=permanent) from None
        if decision.approved and after is not None and after.get("status") == "blocked":
            raise DeliveryError(
                f"GitLab still waits for approvals on deployment {deployment_id}: the bridge's token counts "
                "once; add approver_tokens for the people who approve, or approve the rest in GitLab",
                permanent=True)

    async def _decide(self, outcome: Outcome, project: str, deployment_id: int, decision: Decision) -> None:
        """Each deciding person with a token of their own decides as themself; the bridge's
        token decides once for everyone else."""
        keys = await self._deciders(outcome, decision)
        own = [(key, gl) for key in keys if (gl := self.client.approver(key)) is not None]
        for key, gl in own:
            await self._approve_once(gl, project, deployment_id, decision, f"{outcome.request.id}:{key}")
        if len(own) < max(len(keys), 1):
            await self._approve_once(self.client.bot, project, deployment_id, decision, f"{outcome.request.id}:bot")

    async def _approve_once(self, gl: Any, project: str, deployment_id: int, decision: Decision, key: str) -> None:
        """An approval GitLab already has from this user (an earlier attempt) is not an error."""
        try:
            await self.client.approve(gl, project, deployment_id, decision.approved, decision.comment)
        except GitLabUnavailable as exc:
            if exc.status == 400 and "already" in str(exc).lower():
                return
            raise

    async def _deciders(self, outcome: Outcome, decision: Decision) -> list[str]:
        """The names `approver_tokens` may know the deciding people by: for a quorum, every
        voter who gave the winning answer; else who answered. A person is named by their
        `people:` name and by their GitLab username."""
        answer = outcome.answer
        assert answer is not None
        voters: list[str] = []
        if self.store is not None:
            winning = json.dumps(answer.values, sort_keys=True)
            voters = [v.voter for v in await self.store.list_votes(outcome.request.id) if v.value == winning]
        if not voters:
            voters = [(answer.responder.person and f"person:{answer.responder.person}") or answer.responder.key]
        keys = []
        for voter in dict.fromkeys(voters):
            names = [voter.removeprefix("person:")]
            rules = outcome.request.rules
            person_handles = (rules.people.get(names[0], []) if rules else [])
            names += [h.removeprefix("gitlab:") for h in person_handles if h.startswith("gitlab:")]
            if voter.startswith("gitlab:"):
                names.append(voter.removeprefix("gitlab:"))
            keys.append(next((n for n in names if n in self.config.approver_tokens), names[0]))
        return keys

    async def doctor(self) -> list[Finding]:
        """`hitl-bridge doctor`: do the bridge's token and every approver's token work?"""
        check = f"source {self.name}"
        findings = []
        try:
            findings.append(ok(check, f"{self.config.url} answers as {await self.client.whoami()}"))
        except GitLabUnavailable as exc:
            return [fail(check, f"{self.config.url}: {exc}", f"check sources[…].token and url of {self.name!r}")]
        for key in self.config.approver_tokens:
            gl = self.client.approver(key)
            try:
                findings.append(ok(f"{check} approver {key}", f"answers as {await self.client.whoami(gl)}"))
            except GitLabUnavailable as exc:
                findings.append(fail(f"{check} approver {key}", str(exc), f"renew approver_tokens.{key}"))
        return findings

    async def close(self) -> None:
        """python-gitlab keeps a requests session per token; nothing async to close."""

    # -- finding blocked deployments --------------------------------------------------
    async def poll_once(self, sink: RequestSink, projects: Sequence[str] | None = None) -> None:
        """Ask for every blocked deployment; withdraw those no longer blocked."""
        self.sink = sink
        async with self._looking:
            blocked: set[str] = set()
            read: set[str] = set()
            for project in projects or self.config.projects:
                try:
                    for deployment in await self.client.blocked(project):
                        env = str((deployment.get("environment") or {}).get("name") or "")
                        if self.config.environments and env not in self.config.environments:
                            continue
                        blocked.add(await self._submit(project, deployment))
                    read.add(project.lower())
                    self.errors.pop(project, None)
                except (GitLabUnavailable, KeyError, TypeError, ValueError) as exc:
                    self.errors[project] = f"cannot list blocked deployments: {exc}"
            for request in await self._open():
                if (str(request.source_ref.get("project", "")).lower() in read and request.external_id
                        and request.external_id not in blocked):
                    await sink.withdraw(self.name, request.external_id,
                                        "no longer blocked in GitLab (decided there, or cancelled)")

    async def _submit(self, project: str, deployment: dict[str, Any]) -> str:
        deployment_id = int(deployment["id"])
        env = str((deployment.get("environment") or {}).get("name") or "")
        if not env:
            raise ValueError(f"deployment {deployment_id} names no environment")
        sha = str(deployment.get("sha") or "")
        job = deployment.get("deployable") if isinstance(deployment.get("deployable"), dict) else {}
        pipeline = (job or {}).get("pipeline") if isinstance((job or {}).get("pipeline"), dict) else {}
        links = {k: str(v) for k, v in (("Job", (job or {}).get("web_url")),
                                         ("Pipeline", (pipeline or {}).get("web_url"))) if isinstance(v, str)}
        needed = approvals_required(deployment)
        deploy = Deploy(platform="gitlab", external_id=external_id(project, deployment_id), project=project,
                        environment=env, ref=str(deployment.get("ref") or ""), sha=sha,
                        triggered_by=str((deployment.get("user") or {}).get("username") or "") or None,
                        run_id=str((pipeline or {}).get("id") or deployment_id), links=links,
                        details={"deployment_id": deployment_id, "approvals_required": needed})
        if self.config.compare and sha:
            try:
                since = await self.client.commits_since_last(project, env, sha)
            except GitLabUnavailable:
                since = None
            if since is not None:
                deploy = Deploy(**{**deploy.__dict__, "commits": since[0], "commits_total": since[1],
                                   "links": {**links, **({"Changes": since[2]} if since[2] else {})}})
        request = deploy_request(deploy)
        request.labels["approvals"] = str(needed)
        ref = {"project": project, "deployment_id": deployment_id, "environment": env}
        await self._sink().submit(request, source=self.name, source_ref=ref)
        return deploy.external_id

    async def _webhook(self, request: HttpRequest) -> JSONResponse:
        assert self.config.webhook_secret is not None
        given = request.headers.get("x-gitlab-token", "")
        if not hmac.compare_digest(given.encode(), self.config.webhook_secret.get_secret_value().encode()):
            return self.refuse("wrong or missing X-Gitlab-Token")
        try:
            payload = json.loads(await request.body())
        except (ValueError, RecursionError):
            return JSONResponse({"detail": "the body is not JSON"}, status_code=400)
        project = payload.get("project") if isinstance(payload, dict) else None
        path = project.get("path_with_namespace") if isinstance(project, dict) else None
        pid = project.get("id") if isinstance(project, dict) else None
        watched = [p for p in self.config.projects if p.lower() == str(path).lower() or p == str(pid)]
        if not watched:
            return JSONResponse({"detail": "not a watched project: nothing to do"}, status_code=202)
        await self.poll_once(self._sink(), watched)
        return JSONResponse({"looked": watched}, status_code=202)
