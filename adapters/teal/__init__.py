"""Teal Agents (sk-agents) tool-call approvals: paused replies in, approve/reject out."""

from __future__ import annotations

from typing import Any

from adapters.teal.source import TealConfig, TealSource
from bridge.registry import AdapterContext


def build_source(section: dict[str, Any], ctx: AdapterContext) -> TealSource:
    """Registry factory for `type: teal`."""
    return TealSource(ctx.parse(TealConfig, section), ctx.settings, ctx.store)


__all__ = ["TealConfig", "TealSource", "build_source"]
