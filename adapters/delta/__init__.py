"""Delta Engine file mailboxes: the `delta` source (PROTOCOLS §1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.delta.config import DeltaConfig
from adapters.delta.source import DeltaSource

if TYPE_CHECKING:
    from bridge.registry import AdapterContext

__all__ = ["DeltaConfig", "DeltaSource", "build_source"]


def build_source(section: dict[str, Any], ctx: AdapterContext) -> DeltaSource:
    """Factory for `sources: [{type: delta, roots: [...], resume_command: ...}]`."""
    config = ctx.parse(DeltaConfig, section)
    delivery_timeout = ctx.settings.delivery.timeout.total_seconds()
    return DeltaSource(config, deliver_window_s=max(0.5, delivery_timeout - 1.0))
