"""GitLab deployment approvals: deployments blocked in protected environments, decided
through the deployment approval API."""

from __future__ import annotations

from typing import Any

from adapters.gitlab.settings import GitLabConfig
from adapters.gitlab.source import GitLabSource
from bridge.registry import AdapterContext


def build_source(section: dict[str, Any], ctx: AdapterContext) -> GitLabSource:
    """Registry factory for `type: gitlab`."""
    return GitLabSource(ctx.parse(GitLabConfig, section), ctx.store)


__all__ = ["GitLabConfig", "GitLabSource", "build_source"]
