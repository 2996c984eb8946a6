"""Block Kit for the Home tab (home.py): a pure function from the requests waiting for
a person to the view Slack publishes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from adapters.slack.text import escape, mrkdwn, plain, slack_date, truncate
from bridge.models import Request

SHOW_ACTION = "home:show"
LISTED = 20  # Slack allows 100 blocks in a Home tab


def home_view(waiting: list[Request], now: datetime) -> dict[str, Any]:
    """The Home tab listing `waiting` (soonest deadline first), as of `now`."""
    blocks: list[dict[str, Any]] = [{"type": "header", "text": plain("Waiting for your answer", 150)}]
    if not waiting:
        blocks.append({"type": "section", "text": mrkdwn("Nothing waits for you right now. :tada:")})
    for request in waiting[:LISTED]:
        due = f"\nAnswer by {slack_date(request.deadline)}" if request.deadline else ""
        blocks.append({
            "type": "section", "block_id": f"home:{request.id}",
            "text": mrkdwn(f"*{escape(truncate(request.title, 200))}*{due}"),
            "accessory": {"type": "button", "action_id": SHOW_ACTION, "value": request.id,
                          "text": plain("Send to my DM", 75)},
        })
    if len(waiting) > LISTED:
        blocks.append({"type": "context", "elements": [mrkdwn(f"…and {len(waiting) - LISTED} more.")]})
    stamp = now.strftime("%Y-%m-%d %H:%M UTC")
    blocks.append({"type": "context", "elements": [mrkdwn(f"As of {stamp}; reopen the tab to refresh.")]})
    return {"type": "home", "blocks": blocks}
