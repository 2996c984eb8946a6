"""`sources: - type: gitlab` (see docs/deploy-approvals.md)."""

from __future__ import annotations

import re
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from bridge.config_daemon import Duration

NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,100}$"
PROJECT_PATTERN = r"^([0-9]{1,20}|[A-Za-z0-9_.-]{1,255}(/[A-Za-z0-9_.-]{1,255}){1,20})$"


class GitLabConfig(BaseModel):
    """Deployments blocked on approval in GitLab's protected environments: found by polling
    (a webhook only makes the next look happen at once), decided through the approval API."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="gitlab", pattern=NAME_PATTERN)
    #: the GitLab instance (its API is `<url>/api/v4`)
    url: str = Field(default="https://gitlab.com", pattern=r"^https?://", max_length=2000)
    #: the bridge's own token (read_api + approving): reads deployments, and approves for
    #: people who have no token of their own in `approver_tokens` (it counts as one approval)
    token: SecretStr
    #: projects to watch: `group/project` paths or numeric ids
    projects: list[str] = Field(min_length=1, max_length=200)
    #: only these environments (empty: every protected environment that blocks)
    environments: list[str] = Field(default_factory=list, max_length=200)
    #: a person's own token, by their name in `people:` or their GitLab username: their
    #: approval in the bridge is given in GitLab as them, so GitLab counts each person once
    approver_tokens: dict[str, SecretStr] = Field(default_factory=dict, max_length=500)
    #: the X-Gitlab-Token of a project webhook (job or deployment events) at
    #: /v1/sources/<name>/webhook; unset: no webhook route, polling only
    webhook_secret: SecretStr | None = None
    poll_every: Duration = timedelta(seconds=30)
    timeout: Duration = timedelta(seconds=10)
    #: read the commits since the environment's last successful deployment (the compare API)
    compare: bool = True

    @field_validator("projects")
    @classmethod
    def _projects(cls, projects: list[str]) -> list[str]:
        for project in projects:
            if not re.match(PROJECT_PATTERN, project) or {".", ".."} & set(project.split("/")):
                raise ValueError(f"{project[:100]!r} is not a project path (group/project) or id")
        return projects

    @field_validator("webhook_secret")
    @classmethod
    def _long_enough(cls, secret: SecretStr | None) -> SecretStr | None:
        if secret is not None and len(secret.get_secret_value()) < 16:
            raise ValueError("use at least 16 characters (anyone who knows it can make the bridge look)")
        return secret
