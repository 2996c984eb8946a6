"""The GitLab REST calls the source makes, through python-gitlab (run in a thread: it is a
synchronous library). python-gitlab honours `Retry-After` and `RateLimit-Reset` on a 429
and retries 5xx (`max_retries` times); what still fails is raised as GitLabUnavailable.
One `Gitlab` per token: the bridge's own, and each approver's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import gitlab
from gitlab.exceptions import GitlabError

from adapters.deploys import Commit
from adapters.gitlab.settings import GitLabConfig

MAX_RETRIES = 3


class GitLabUnavailable(Exception):
    """A call failed (the message names the status and GitLab's reason, never a token)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _explain(exc: Exception) -> GitLabUnavailable:
    if isinstance(exc, GitlabError):
        status = exc.response_code
        message = str(exc.error_message or "")[:200]
        return GitLabUnavailable(f"GitLab answered HTTP {status}: {message}" if status else
                                 f"GitLab call failed: {message}", status=status)
    return GitLabUnavailable(f"GitLab unreachable: {type(exc).__name__}")


class GitLabClient:
    def __init__(self, config: GitLabConfig) -> None:
        self.config = config
        self.bot = self.connect(config.token.get_secret_value())
        self._approvers: dict[str, gitlab.Gitlab] = {}

    def connect(self, token: str) -> gitlab.Gitlab:
        return gitlab.Gitlab(self.config.url, private_token=token, timeout=self.config.timeout.total_seconds(),
                             retry_transient_errors=True, user_agent="hitl-bridge")

    def approver(self, key: str) -> gitlab.Gitlab | None:
        """The connection acting as the person `key` names in `approver_tokens`, if any."""
        token = self.config.approver_tokens.get(key)
        if token is None:
            return None
        if key not in self._approvers:
            self._approvers[key] = self.connect(token.get_secret_value())
        return self._approvers[key]

    async def _call(self, gl: gitlab.Gitlab, method: str, path: str, **kwargs: Any) -> Any:
        kwargs.update(obey_rate_limit=True, max_retries=MAX_RETRIES)

        def call() -> Any:
            if method == "GET":
                return gl.http_get(path, **kwargs)
            return gl.http_post(path, **kwargs)
        try:
            return await asyncio.to_thread(call)
        except Exception as exc:
            raise _explain(exc) from None

    @staticmethod
    def _project(project: str) -> str:
        return gitlab.utils.EncodedId(project).__str__()

    async def blocked(self, project: str) -> list[dict[str, Any]]:
        """The project's deployments waiting for approval, each read in full (approval summary)."""
        listed = await self._call(self.bot, "GET", f"/projects/{self._project(project)}/deployments",
                                  query_data={"status": "blocked", "per_page": 100})
        found = []
        for item in listed if isinstance(listed, list) else []:
            if isinstance(item, dict) and isinstance(item.get("id"), int):
                full = await self.deployment(project, item["id"])
                found.append(full or item)
        return found

    async def deployment(self, project: str, deployment_id: int) -> dict[str, Any] | None:
        found = await self._call(self.bot, "GET", f"/projects/{self._project(project)}/deployments/{deployment_id}")
        return found if isinstance(found, dict) else None

    async def commits_since_last(self, project: str, environment: str, sha: str,
                                 ) -> tuple[list[Commit], int, str] | None:
        """Commits between the environment's last successful deployment and `sha`; None when
        there was none before."""
        pid = self._project(project)
        last = await self._call(self.bot, "GET", f"/projects/{pid}/deployments",
                                query_data={"environment": environment, "status": "success",
                                            "order_by": "id", "sort": "desc", "per_page": 1})
        if not isinstance(last, list) or not last or not isinstance(last[0], dict) or not last[0].get("sha"):
            return None
        base = str(last[0]["sha"])
        compared = await self._call(self.bot, "GET", f"/projects/{pid}/repository/compare",
                                    query_data={"from": base, "to": sha})
        if not isinstance(compared, dict):
            return None
        commits = [Commit(str(c.get("id") or "")[:40], str(c.get("author_name") or "")[:100],
                          str(c.get("title") or "")[:200])
                   for c in compared.get("commits") or [] if isinstance(c, dict)]
        return commits, len(commits), str(compared.get("web_url") or "")

    async def approve(self, gl: gitlab.Gitlab, project: str, deployment_id: int, approved: bool,
                      comment: str) -> None:
        """`POST /projects/:id/deployments/:deployment_id/approval` as `gl`'s user."""
        await self._call(gl, "POST", f"/projects/{self._project(project)}/deployments/{deployment_id}/approval",
                         post_data={"status": "approved" if approved else "rejected", "comment": comment})

    async def whoami(self, gl: gitlab.Gitlab | None = None) -> str:
        found = await self._call(gl or self.bot, "GET", "/user")
        return str(found.get("username") or "?") if isinstance(found, dict) else "?"
