"""AG-UI agents (type: agui): runs go through the bridge, an interrupt outcome becomes a
request, and the answer resumes the run (`RunAgentInput.resume`)."""

from __future__ import annotations

from typing import Any

from adapters.agui.source import AguiConfig, AguiSource
from bridge.registry import AdapterContext


def build_source(section: dict[str, Any], ctx: AdapterContext) -> AguiSource:
    """Registry factory for `type: agui`."""
    return AguiSource(ctx.parse(AguiConfig, section), ctx.settings, ctx.store)


__all__ = ["AguiConfig", "AguiSource", "build_source"]
