"""The GitHub source: deploys waiting in GitHub Actions environments become bridge requests.

`mode: app` — a GitHub App with a custom deployment protection rule. GitHub POSTs a
`deployment_protection_rule` webhook to `/v1/sources/<name>/webhook`; its
`X-Hub-Signature-256` is checked with the webhook secret (refused and counted otherwise),
the run and the commits since the environment's last successful deployment are read, and
the request is stored before GitHub gets its 202. The decision goes back through the
run's protection-rule endpoint (the webhook's `deployment_callback_url`) with an
installation token. `workflow_run` completed, `deployment_review` and `deployment_status`
webhooks withdraw a request nobody waits on any more.

`mode: poll` — no App: every `poll_every` the runs of `repositories` waiting on required
reviewers are read with a reviewer's token (`pending_deployments`); the decision is that
reviewer's review. A wait that disappears (cancelled, decided in GitHub) withdraws the request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from adapters.deploy_source import DeploySource
from adapters.deploys import Deploy, decision_of, deploy_request
from adapters.github.client import GitHubClient, GitHubUnavailable
from adapters.github.settings import GitHubConfig
from adapters.github.webhooks import (
    ForgedWebhook,
    ProtectionRule,
    UnreadableWebhook,
    WaitEnded,
    check_signature,
    protection_rule,
    wait_ended,
)
from bridge.doctor import Finding, fail, ok
from bridge.models import Request
from bridge.ports import DeliveryError, Outcome, RequestSink
from bridge.store.base import Store


def external_id(repo: str, run_id: int, environment: str) -> str:
    return f"github:{repo.lower()}:{run_id}:{environment}"


class GitHubSource(DeploySource):
    """Source port for GitHub Actions deployment approvals."""

    platform = "GitHub"
    signature = "X-Hub-Signature-256"

    def __init__(self, config: GitHubConfig, store: Store | None = None) -> None:
        super().__init__(config.name, store)
        self.config = config
        self.client = GitHubClient(config)

    # -- the port ---------------------------------------------------------------------
    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        self.sink = sink
        if self.config.mode != "app":
            return []
        return [Route(f"/v1/sources/{self.name}/webhook", self._webhook, methods=["POST"])]

    async def run(self, sink: RequestSink) -> None:
        self.sink = sink
        if self.config.mode == "poll":
            await self.poll_forever(sink, self.config.poll_every)

    async def deliver(self, outcome: Outcome) -> None:
        """Approve or reject in GitHub; a withdrawn or cancelled request sends nothing."""
        decision = decision_of(outcome)
        if decision is None:
            return
        ref = outcome.request.source_ref
        try:
            repo, run_id, env = str(ref["repo"]), int(ref["run_id"]), str(ref["environment"])
        except (KeyError, TypeError, ValueError):
            raise DeliveryError("the request carries no GitHub reference", permanent=True) from None
        try:
            if ref.get("environment_id") is not None:
                await self.client.review_pending(repo, run_id, [int(ref["environment_id"])],
                                                 decision.approved, decision.comment)
            else:
                await self.client.answer_protection_rule(ref.get("installation_id"), repo, run_id, env,
                                                         decision.approved, decision.comment)
        except GitHubUnavailable as exc:
            # 4xx but a rate limit: the run no longer waits, or the credentials cannot decide it
            permanent = exc.status is not None and 400 <= exc.status < 500 and exc.status not in (403, 429)
            why = str(exc)
            if exc.status == 422:
                why += ("; the run no longer waits for this decision (decided, bypassed or cancelled in GitHub, "
                        "or an earlier attempt landed without its reply)")
            raise DeliveryError(why, permanent=permanent) from None

    async def doctor(self) -> list[Finding]:
        """`hitl-bridge doctor`: do the credentials work against `api_url`?"""
        check = f"source {self.name}"
        try:
            who = await self.client.whoami()
        except GitHubUnavailable as exc:
            return [fail(check, f"{self.config.api_url}: {exc}",
                         "check app_id and private_key (mode: app) or token (mode: poll), and api_url")]
        return [ok(check, f"{self.config.api_url} answers as {who}")]

    async def close(self) -> None:
        await self.client.close()

    # -- webhooks ---------------------------------------------------------------------
    async def _webhook(self, request: HttpRequest) -> JSONResponse:
        body = await request.body()
        assert self.config.webhook_secret is not None
        try:
            check_signature(self.config.webhook_secret.get_secret_value(), body,
                            request.headers.get("x-hub-signature-256"))
        except ForgedWebhook as exc:
            return self.refuse(str(exc))
        event = request.headers.get("x-github-event", "")
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):
            return JSONResponse({"detail": "the body is not JSON"}, status_code=400)
        if not isinstance(payload, dict):
            return JSONResponse({"detail": "the body is not a JSON object"}, status_code=422)
        try:
            if event == "deployment_protection_rule" and payload.get("action") == "requested":
                rule = protection_rule(payload, self.config.api_url)
                stored, created = await self._submit_rule(rule)
                return JSONResponse({"id": stored.id, "created": created}, status_code=202)
        except UnreadableWebhook as exc:
            return JSONResponse({"detail": f"{event}: {exc}"}, status_code=422)
        ended = wait_ended(event, payload)
        if ended is not None:
            return JSONResponse({"withdrawn": await self._withdraw(ended)}, status_code=202)
        return JSONResponse({"detail": f"{event or 'no event'}: nothing to do"}, status_code=202)

    async def _submit_rule(self, rule: ProtectionRule) -> tuple[Request, bool]:
        gh = self.client.as_installation(rule.installation_id)
        details: dict[str, Any] = {"run_id": rule.run_id}
        triggered_by = rule.creator
        links = {"Workflow run": f"{_web_root(self.config.api_url)}/{rule.repo}/actions/runs/{rule.run_id}"}
        try:
            run = await self.client.run(gh, rule.repo, rule.run_id)
            actor = run.get("triggering_actor") or run.get("actor") or {}
            triggered_by = str(actor.get("login") or triggered_by or "") or None
            if isinstance(run.get("html_url"), str):
                links["Workflow run"] = run["html_url"]
            details["workflow"] = str(run.get("name") or "")[:200]
        except GitHubUnavailable as exc:
            self.errors[f"{rule.repo}#{rule.run_id}"] = f"cannot read the run: {exc}"
        commits = total = None
        if self.config.compare:
            try:
                since = await self.client.commits_since_last(gh, rule.repo, rule.environment, rule.sha,
                                                             rule.deployment_id)
            except GitHubUnavailable as exc:
                self.errors[f"{rule.repo}#{rule.run_id}"] = f"cannot compare commits: {exc}"
                since = None
            if since is not None:
                commits, total, compare_url = since
                if compare_url:
                    links["Changes"] = compare_url
        deploy = Deploy(platform="github", external_id=external_id(rule.repo, rule.run_id, rule.environment),
                        project=rule.repo, environment=rule.environment, ref=rule.ref, sha=rule.sha,
                        triggered_by=triggered_by, run_id=str(rule.run_id), commits=commits, commits_total=total,
                        links=links, details=details)
        ref = {"repo": rule.repo, "run_id": rule.run_id, "environment": rule.environment,
               "installation_id": rule.installation_id, "deployment_id": rule.deployment_id}
        return await self._sink().submit(deploy_request(deploy), source=self.name, source_ref=ref)

    async def _withdraw(self, ended: WaitEnded) -> list[str]:
        withdrawn = []
        for request in await self._open():
            ref = request.source_ref
            if (str(ref.get("repo", "")).lower() == ended.repo.lower() and ref.get("run_id") == ended.run_id
                    and ended.environment in (None, ref.get("environment")) and request.external_id):
                done = await self._sink().withdraw(self.name, request.external_id, ended.why)
                if done is not None:
                    withdrawn.append(done.id)
        return withdrawn

    # -- polling ----------------------------------------------------------------------
    async def poll_once(self, sink: RequestSink) -> None:
        """Ask for every deployment waiting on our reviewer; withdraw the waits that are gone."""
        self.sink = sink
        waiting: set[str] = set()
        read: set[str] = set()
        for repo in self.config.repositories:
            try:
                for run in await self.client.waiting_runs(repo):
                    run_id = int(run["id"])
                    for pending in await self.client.pending_deployments(repo, run_id):
                        env = pending.get("environment") or {}
                        if not pending.get("current_user_can_approve") or not env.get("name"):
                            continue
                        waiting.add(await self._submit_pending(repo, run, env))
                read.add(repo.lower())
                self.errors.pop(repo, None)
            except (GitHubUnavailable, KeyError, TypeError, ValueError) as exc:
                self.errors[repo] = f"cannot list waiting runs: {exc}"
        for request in await self._open():
            ref = request.source_ref
            if (str(ref.get("repo", "")).lower() in read and request.external_id
                    and request.external_id not in waiting):
                await sink.withdraw(self.name, request.external_id, "no longer waiting in GitHub "
                                    "(decided there, or the run was cancelled)")

    async def _submit_pending(self, repo: str, run: dict[str, Any], env: dict[str, Any]) -> str:
        run_id, name = int(run["id"]), str(env["name"])
        actor = run.get("triggering_actor") or run.get("actor") or {}
        deploy = Deploy(platform="github", external_id=external_id(repo, run_id, name), project=repo,
                        environment=name, ref=str(run.get("head_branch") or ""), sha=str(run.get("head_sha") or ""),
                        triggered_by=str(actor.get("login") or "") or None, run_id=str(run_id),
                        links={"Workflow run": str(run.get("html_url") or "")},
                        details={"workflow": str(run.get("name") or "")[:200]})
        if self.config.compare and deploy.sha:
            try:
                since = await self.client.commits_since_last(self.client.as_installation(None), repo, name, deploy.sha)
            except GitHubUnavailable:
                since = None
            if since is not None:
                deploy = Deploy(**{**deploy.__dict__, "commits": since[0], "commits_total": since[1],
                                   "links": {**deploy.links, "Changes": since[2]}})
        ref = {"repo": repo, "run_id": run_id, "environment": name, "environment_id": int(env["id"])}
        await self._sink().submit(deploy_request(deploy), source=self.name, source_ref=ref)
        return deploy.external_id


def _web_root(api_url: str) -> str:
    """https://api.github.com → https://github.com; https://HOST/api/v3 → https://HOST."""
    root = api_url.rstrip("/").removesuffix("/api/v3")
    return root.replace("://api.github.com", "://github.com")
