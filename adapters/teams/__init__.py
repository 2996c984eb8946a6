"""The Microsoft Teams channel: requests as Adaptive Cards with Universal Actions, answers
from Action.Execute invokes and a secret dialog, on the Teams SDK (`microsoft-teams-apps`)."""

from __future__ import annotations

from typing import Any

from adapters.teams.channel import TeamsChannel
from adapters.teams.settings import TeamsSettings
from bridge.registry import AdapterContext

__all__ = ["TeamsChannel", "TeamsSettings", "build_channel"]


def build_channel(section: dict[str, Any], ctx: AdapterContext) -> TeamsChannel:
    """Factory named in the channel's spec."""
    return TeamsChannel(ctx.parse(TeamsSettings, section), ctx.store)
