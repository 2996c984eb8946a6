"""agent-world HITL prompts: single/multiple-select questions per world and chat."""

from __future__ import annotations

from typing import Any

from adapters.agentworld.source import AgentWorldConfig, AgentWorldSource
from bridge.registry import AdapterContext


def build_source(section: dict[str, Any], ctx: AdapterContext) -> AgentWorldSource:
    """Registry factory for `type: agentworld`."""
    return AgentWorldSource(ctx.parse(AgentWorldConfig, section), ctx.store)


__all__ = ["AgentWorldConfig", "AgentWorldSource", "build_source"]
