"""Temporal workflows (type: temporal): a workflow asks through an activity, the answer
comes back as a workflow update (or signal); a workflow that ends first withdraws it."""

from __future__ import annotations

from typing import Any

from adapters.temporal.config import TemporalConfig
from adapters.temporal.source import TemporalSource
from bridge.registry import AdapterContext


def build_source(section: dict[str, Any], ctx: AdapterContext) -> TemporalSource:
    """Registry factory for `type: temporal`."""
    config = ctx.parse(TemporalConfig, section)
    return TemporalSource(config, ctx.settings, ctx.store)


__all__ = ["TemporalConfig", "TemporalSource", "build_source"]
