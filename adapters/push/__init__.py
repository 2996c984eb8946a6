"""Web Push channel: `push:<inbox login>` targets, answered from the notification itself."""

from __future__ import annotations

from typing import Any

from adapters.push.channel import PushChannel
from adapters.push.settings import PushSettings
from bridge.crypto import SecretBox
from bridge.registry import AdapterContext

__all__ = ["PushChannel", "build_channel"]


def build_channel(section: dict[str, Any], ctx: AdapterContext) -> PushChannel:
    settings = ctx.parse(PushSettings, section)
    web = ctx.settings.section("web")
    if web is None or web.get("enabled") is False:
        raise ctx.error("", "push notifications are turned on from the web inbox: keep it enabled "
                            "(remove web.enabled: false)")
    return PushChannel(settings, ctx.store, ctx.clock, SecretBox(ctx.settings.secrets.key))
