"""The GitHub REST calls the source makes, through githubkit: as the App (a JWT, then an
installation access token per installation, cached by githubkit until it expires) or as a
reviewer's token. Replies are read as plain JSON (only the fields used), so a field GitHub
adds or drops never breaks a deploy. Rate limits are githubkit's: a 403/429 with
`Retry-After` or `X-RateLimit-Remaining: 0` is waited out when the wait is at most
`max_wait`, else the call fails and the outbox (or the next poll) tries again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from githubkit import AppAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy
from githubkit.exception import GitHubException, RateLimitExceeded, RequestError, RequestFailed
from githubkit.typing import RetryOption

from adapters.deploys import Commit
from adapters.github.settings import GitHubConfig

#: deployments looked at to find the environment's last successful one
MAX_DEPLOYMENTS_SCANNED = 10


class GitHubUnavailable(Exception):
    """A call failed: unreachable, refused, rate limited past `max_wait` (the message says which)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class BoundedRetry:
    """githubkit's retry decision: wait out a rate limit up to `max_wait` (twice at most),
    retry a 5xx once after a second; give up on everything else."""

    def __init__(self, max_wait: timedelta) -> None:
        self.max_wait = max_wait

    def __call__(self, exc: GitHubException, retry_count: int) -> RetryOption:
        if isinstance(exc, RateLimitExceeded):
            if retry_count < 2 and exc.retry_after <= self.max_wait:
                return RetryOption(True, exc.retry_after)
            return RetryOption(False)
        if isinstance(exc, RequestFailed) and exc.response.status_code >= 500 and retry_count < 1:
            return RetryOption(True, timedelta(seconds=1))
        return RetryOption(False)


def explain(exc: Exception) -> GitHubUnavailable:
    """A githubkit error as one line that names no credential."""
    if isinstance(exc, RateLimitExceeded):
        wait = int(exc.retry_after.total_seconds())
        return GitHubUnavailable(f"GitHub rate limit: retry after {wait} s", status=exc.response.status_code)
    if isinstance(exc, RequestFailed):
        status = exc.response.status_code
        try:
            message = str(exc.response.json().get("message", ""))[:200]
        except (ValueError, AttributeError):
            message = ""
        return GitHubUnavailable(f"GitHub answered HTTP {status}" + (f": {message}" if message else ""),
                                 status=status)
    if isinstance(exc, RequestError):
        return GitHubUnavailable(f"GitHub unreachable: {type(exc.exc).__name__}")
    return GitHubUnavailable(f"GitHub call failed: {type(exc).__name__}")


class GitHubClient:
    """One source's connection to GitHub (an App, or a token)."""

    def __init__(self, config: GitHubConfig) -> None:
        self.config = config
        options: dict[str, Any] = {
            "base_url": config.api_url.rstrip("/") + "/", "timeout": config.timeout.total_seconds(),
            "auto_retry": BoundedRetry(config.max_wait), "http_cache": False,
            "cache_strategy": MemCacheStrategy(),  # this source's tokens only (not the process-wide default)
            "user_agent": "hitl-bridge", "follow_redirects": False,
        }
        if config.mode == "app":
            assert config.app_id is not None and config.private_key is not None
            self.app: GitHub[Any] = GitHub(AppAuthStrategy(config.app_id, config.private_key.get_secret_value()),
                                           **options)
            self.github: GitHub[Any] | None = None
        else:
            assert config.token is not None
            self.github = GitHub(config.token.get_secret_value(), **options)
            self.app = self.github
        self._installations: dict[int, GitHub[Any]] = {}

    def as_installation(self, installation_id: int | None) -> GitHub[Any]:
        """The client acting as installation `installation_id` (the token is bought on first
        use and kept until it expires); the token's client in poll mode."""
        if self.github is not None:
            return self.github
        if installation_id is None:
            raise GitHubUnavailable("the webhook names no App installation")
        if installation_id not in self._installations:
            auth = self.app.auth
            assert isinstance(auth, AppAuthStrategy)
            self._installations[installation_id] = self.app.with_auth(auth.as_installation(installation_id))
        return self._installations[installation_id]

    async def _get(self, gh: GitHub[Any], url: str, params: dict[str, Any] | None = None) -> Any:
        try:
            return (await gh.arequest("GET", url, params=params)).json()
        except (GitHubException, ValueError) as exc:
            raise explain(exc) from None

    async def run(self, gh: GitHub[Any], repo: str, run_id: int) -> dict[str, Any]:
        found = await self._get(gh, f"/repos/{repo}/actions/runs/{run_id}")
        return found if isinstance(found, dict) else {}

    async def commits_since_last(self, gh: GitHub[Any], repo: str, environment: str, sha: str,
                                 deployment_id: int | None = None) -> tuple[list[Commit], int, str] | None:
        """The commits between the environment's last successful deployment and `sha`, their
        total, and the compare page; None for a first deployment."""
        deployments = await self._get(gh, f"/repos/{repo}/deployments",
                                      {"environment": environment, "per_page": MAX_DEPLOYMENTS_SCANNED})
        base = None
        for deployment in deployments if isinstance(deployments, list) else []:
            if not isinstance(deployment, dict) or deployment.get("id") == deployment_id:
                continue
            statuses = await self._get(gh, f"/repos/{repo}/deployments/{deployment.get('id')}/statuses",
                                       {"per_page": 1})
            if isinstance(statuses, list) and statuses and statuses[0].get("state") == "success":
                base = str(deployment.get("sha") or "")
                break
        if not base:
            return None
        compared = await self._get(gh, f"/repos/{repo}/compare/{base}...{sha}")
        if not isinstance(compared, dict):
            return None
        commits = [_commit(c) for c in compared.get("commits") or [] if isinstance(c, dict)]
        total = compared.get("total_commits")
        return commits, int(total) if isinstance(total, int) else len(commits), str(compared.get("html_url") or "")

    async def waiting_runs(self, repo: str) -> list[dict[str, Any]]:
        """Runs of `repo` waiting (on reviewers, or a wait timer)."""
        assert self.github is not None
        found = await self._get(self.github, f"/repos/{repo}/actions/runs", {"status": "waiting", "per_page": 100})
        runs = found.get("workflow_runs") if isinstance(found, dict) else None
        return [r for r in runs or [] if isinstance(r, dict)]

    async def pending_deployments(self, repo: str, run_id: int) -> list[dict[str, Any]]:
        assert self.github is not None
        found = await self._get(self.github, f"/repos/{repo}/actions/runs/{run_id}/pending_deployments")
        return [p for p in found or [] if isinstance(p, dict)] if isinstance(found, list) else []

    async def answer_protection_rule(self, installation_id: int | None, repo: str, run_id: int,
                                     environment: str, approved: bool, comment: str) -> None:
        """Approve or reject this App's custom protection rule for `environment` (the
        webhook's `deployment_callback_url`)."""
        owner, name = repo.split("/", 1)
        gh = self.as_installation(installation_id)
        try:
            await gh.rest.actions.async_review_custom_gates_for_run(
                owner, name, run_id, environment_name=environment,
                state="approved" if approved else "rejected", comment=comment)
        except GitHubException as exc:
            raise explain(exc) from None

    async def review_pending(self, repo: str, run_id: int, environment_ids: Sequence[int],
                             approved: bool, comment: str) -> None:
        """Approve or reject a run's deployments waiting on required reviewers."""
        owner, name = repo.split("/", 1)
        assert self.github is not None
        try:
            await self.github.rest.actions.async_review_pending_deployments_for_run(
                owner, name, run_id, environment_ids=list(environment_ids),
                state="approved" if approved else "rejected", comment=comment)
        except GitHubException as exc:
            raise explain(exc) from None

    async def whoami(self) -> str:
        """Who the credentials are (`doctor`): the App's slug, or the token's login."""
        found = await self._get(self.app, "/app" if self.github is None else "/user")
        if not isinstance(found, dict):
            return "?"
        return str(found.get("slug") or found.get("login") or "?")

    async def close(self) -> None:
        """githubkit opens a client per call: nothing is held open between calls."""


def _commit(raw: dict[str, Any]) -> Commit:
    def obj(parent: dict[str, Any], key: str) -> dict[str, Any]:
        value = parent.get(key)
        return value if isinstance(value, dict) else {}

    inner = obj(raw, "commit")
    login = obj(raw, "author").get("login") or obj(inner, "author").get("name") or ""
    message = str(inner.get("message") or "")
    return Commit(str(raw.get("sha") or "")[:40], str(login)[:100], message.split("\n", 1)[0][:200])
