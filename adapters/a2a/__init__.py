"""The bridge as an A2A agent (type: a2a): a `message/send` or `message/stream` to the
"people" agent asks a person; the task completes with the answer as an artifact."""

from __future__ import annotations

from typing import Any

from adapters.a2a.server import A2aConfig, A2aSource
from bridge.registry import AdapterContext


def build_source(section: dict[str, Any], ctx: AdapterContext) -> A2aSource:
    """Registry factory for `type: a2a`."""
    return A2aSource(ctx.parse(A2aConfig, section), ctx.settings, ctx.store)


__all__ = ["A2aConfig", "A2aSource", "build_source"]
