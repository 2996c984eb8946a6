"""Email channel: `email:<address>` targets, answered through a signed link to the web inbox."""

from __future__ import annotations

from typing import Any

from adapters.email.channel import EmailChannel
from adapters.email.settings import EmailSettings
from bridge.registry import AdapterContext

__all__ = ["EmailChannel", "build_channel"]


def build_channel(section: dict[str, Any], ctx: AdapterContext) -> EmailChannel:
    settings = ctx.parse(EmailSettings, section)
    web = ctx.settings.section("web")
    if web is None or web.get("enabled") is False:
        raise ctx.error("", "email answer links open the web inbox's answer page: keep the web inbox enabled "
                            "(remove web.enabled: false)")
    http = ctx.settings.http
    public = http.public_url or f"http://{'127.0.0.1' if http.host in ('0.0.0.0', '::', '') else http.host}:{http.port}"
    return EmailChannel(settings, ctx.store, ctx.clock, public)
