"""Mastra suspended workflow runs and inbox tasks waiting for input."""

from __future__ import annotations

from typing import Any

from adapters.mastra.source import MastraConfig, MastraSource
from bridge.registry import AdapterContext


def build_source(section: dict[str, Any], ctx: AdapterContext) -> MastraSource:
    """Registry factory for `type: mastra`."""
    config = ctx.parse(MastraConfig, section)
    if not config.workflows and not config.inboxes:
        raise ctx.error("workflows", "name at least one workflow id (or inbox id under `inboxes`) to poll")
    return MastraSource(config, ctx.store)


__all__ = ["MastraConfig", "MastraSource", "build_source"]
