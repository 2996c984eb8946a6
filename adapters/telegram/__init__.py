"""Telegram channel (python-telegram-bot v22): inline buttons, replies, secrets in private chat."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.telegram.settings import TelegramSettings

if TYPE_CHECKING:
    from adapters.telegram.channel import TelegramChannel
    from bridge.registry import AdapterContext


def build_channel(section: dict[str, Any], ctx: AdapterContext) -> TelegramChannel:
    """Factory registered as `telegram` (bridge.registry): validates the `telegram:` section."""
    from adapters.telegram.channel import TelegramChannel

    settings = ctx.parse(TelegramSettings, section)
    return TelegramChannel(settings, ctx.store, ctx.clock)


__all__ = ["TelegramSettings", "build_channel"]
