"""GitHub Actions deployment approvals: custom protection rules (a GitHub App) or runs
waiting on required reviewers (a reviewer's token)."""

from __future__ import annotations

from typing import Any

from adapters.github.settings import GitHubConfig
from adapters.github.source import GitHubSource
from bridge.registry import AdapterContext


def build_source(section: dict[str, Any], ctx: AdapterContext) -> GitHubSource:
    """Registry factory for `type: github`."""
    return GitHubSource(ctx.parse(GitHubConfig, section), ctx.store)


__all__ = ["GitHubConfig", "GitHubSource", "build_source"]
