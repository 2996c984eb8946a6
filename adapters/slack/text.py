"""Text helpers for Block Kit: escaping, truncation within Slack's limits, time formats."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bridge.models import Responder

ELLIPSIS = "…"


def escape(text: str) -> str:
    """Escape mrkdwn control characters so user text cannot mention @channel or fake links."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def truncate(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, ending with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + ELLIPSIS


def plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": truncate(text, limit) or " ", "emoji": True}


def mrkdwn(text: str, limit: int = 3000) -> dict[str, Any]:
    """A mrkdwn text object; `text` must already be escaped where it holds user input."""
    return {"type": "mrkdwn", "text": truncate(text, limit) or " "}


def show_value(value: Any) -> str:
    """A context or argument value as one line of text (strings bare, the rest as JSON)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def clock(at: datetime, since: datetime | None = None) -> str:
    """`14:02 UTC`, with the date in front unless it is the same day as `since`."""
    at = at.astimezone(UTC)
    if since is not None and at.date() == since.astimezone(UTC).date():
        return at.strftime("%H:%M UTC")
    return at.strftime("%Y-%m-%d %H:%M UTC")


def slack_date(at: datetime) -> str:
    """A deadline as every human-facing place shows times: 24-hour, with the zone (UTC). Not a
    Slack date token: Slack renders those as "09:26 PM" for many readers, beside "21:26 UTC"
    elsewhere in the same message."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def who(responder: Responder) -> str:
    """A mention for Slack people, the escaped name and platform for everyone else."""
    if responder.platform == "slack" and responder.user_id:
        return f"<@{escape(responder.user_id)}>"
    if responder.platform == "timeout":
        return "the timeout"
    return f"{escape(responder.display)} ({escape(responder.platform)})"
