"""ntfy channel: `ntfy:<topic>` targets, answered with the message's own buttons."""

from __future__ import annotations

from typing import Any

from adapters.ntfy.channel import NtfyChannel
from adapters.ntfy.settings import NtfySettings
from bridge.links import link_base
from bridge.registry import AdapterContext

__all__ = ["NtfyChannel", "build_channel"]


def build_channel(section: dict[str, Any], ctx: AdapterContext) -> NtfyChannel:
    settings = ctx.parse(NtfySettings, section)
    return NtfyChannel(settings, ctx.store, ctx.clock, link_base(ctx.settings.http))
