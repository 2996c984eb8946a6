"""Email channel: `email:<address>` targets, answered through a signed link to the web inbox."""

from __future__ import annotations

from typing import Any

from adapters.email.channel import EmailChannel
from adapters.email.settings import EmailSettings
from bridge.links import link_base
from bridge.registry import AdapterContext

__all__ = ["EmailChannel", "build_channel"]


def build_channel(section: dict[str, Any], ctx: AdapterContext) -> EmailChannel:
    settings = ctx.parse(EmailSettings, section)
    web = ctx.settings.section("web")
    if web is None or web.get("enabled") is False:
        raise ctx.error("", "email answer links open the web inbox's answer page: keep the web inbox enabled "
                            "(remove web.enabled: false)")
    return EmailChannel(settings, ctx.store, ctx.clock, link_base(ctx.settings.http))
