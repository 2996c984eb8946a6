"""Mastra suspended workflow runs (Mastra 1.x; tested with @mastra/core 1.71.0)."""

from __future__ import annotations

from typing import Any

from adapters.mastra.source import MastraConfig, MastraSource
from bridge.registry import AdapterContext


def build_source(section: dict[str, Any], ctx: AdapterContext) -> MastraSource:
    """Registry factory for `type: mastra`."""
    if "inboxes" in section:
        raise ctx.error("inboxes", "Mastra inbox tasks are in no released Mastra (1.x has no /api/inboxes "
                                   "routes); remove `inboxes` and list the workflows to poll under `workflows`")
    config = ctx.parse(MastraConfig, section)
    if not config.workflows:
        raise ctx.error("workflows", "name at least one workflow id to poll")
    return MastraSource(config, ctx.store)


__all__ = ["MastraConfig", "MastraSource", "build_source"]
