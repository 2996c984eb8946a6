"""`sources: - type: github` (see docs/deploy-approvals.md)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from bridge.config_daemon import Duration

NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,100}$"
REPO_PATTERN = r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$"


class GitHubConfig(BaseModel):
    """A GitHub App answering custom deployment protection rules (`mode: app`), or a
    reviewer's token answering runs waiting on required reviewers (`mode: poll`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="github", pattern=NAME_PATTERN)
    #: `app`: webhooks at /v1/sources/<name>/webhook, decisions on the callback URL;
    #: `poll`: runs waiting on reviewers are read every `poll_every`
    mode: Literal["app", "poll"] = "app"
    #: the REST API root (GitHub Enterprise Server: https://HOST/api/v3)
    api_url: str = Field(default="https://api.github.com", pattern=r"^https?://", max_length=2000)
    #: the GitHub App's id (mode: app)
    app_id: int | None = Field(default=None, ge=1)
    #: the App's private key, PEM (mode: app); signs the JWT that buys installation tokens
    private_key: SecretStr | None = None
    #: the App's webhook secret (mode: app): every webhook's X-Hub-Signature-256 is checked with it
    webhook_secret: SecretStr | None = None
    #: a token of a required reviewer (mode: poll), or a fine-grained token with actions:write
    token: SecretStr | None = None
    #: repositories to watch, `owner/name` (mode: poll)
    repositories: list[str] = Field(default_factory=list, max_length=200)
    poll_every: Duration = timedelta(seconds=30)
    timeout: Duration = timedelta(seconds=10)
    #: the longest `Retry-After` / rate-limit reset waited for inside one call; longer waits
    #: fail the call and the outbox retries it later
    max_wait: Duration = timedelta(seconds=60)
    #: read the commits since the environment's last successful deployment (the compare API)
    compare: bool = True

    @model_validator(mode="after")
    def _mode_needs(self) -> GitHubConfig:
        if self.mode == "app":
            missing = [k for k in ("app_id", "private_key", "webhook_secret") if not getattr(self, k)]
            if missing:
                raise ValueError(f"mode: app needs {', '.join(missing)} (from the GitHub App's settings page)")
        else:
            if self.token is None or not self.token.get_secret_value():
                raise ValueError("mode: poll needs `token` (a token of a required reviewer)")
            if not self.repositories:
                raise ValueError("mode: poll needs `repositories` (owner/name, ...)")
        for repo in self.repositories:
            if not re.match(REPO_PATTERN, repo) or {".", ".."} & set(repo.split("/")):
                raise ValueError(f"repositories: {repo[:100]!r} is not owner/name")
        return self
