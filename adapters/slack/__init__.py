"""The Slack channel: requests as Block Kit messages, answers from buttons, modals and
thread replies, on slack-bolt (HTTP at /slack/events, or Socket Mode)."""

from __future__ import annotations

from typing import Any

from adapters.slack.channel import SlackChannel
from adapters.slack.settings import SlackSettings
from bridge.registry import AdapterContext

__all__ = ["SlackChannel", "SlackSettings", "build_channel"]


def build_channel(section: dict[str, Any], ctx: AdapterContext) -> SlackChannel:
    """Factory named in `bridge.registry.CHANNELS`."""
    settings = ctx.parse(SlackSettings, section)
    return SlackChannel(settings)
