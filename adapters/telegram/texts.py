"""The bot's own lines in a conversation (parse mode HTML): who is answering, why reject,
the /start greeting, the /pending list. Pure functions, no network; the request messages
themselves are `render.py`'s."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from html import escape

from adapters.telegram.keyboards import label
from adapters.telegram.render import esc, when
from bridge.durations import format_duration
from bridge.models import Request


def mention(user_id: int, name: str) -> str:
    """A link that notifies the person (their name, or their id when they have none)."""
    return f'<a href="tg://user?id={user_id}">{escape(name or str(user_id))}</a>'


def answering(who: str, request: Request, steps: int) -> str:
    """The header of a step-by-step session (`who`: a `mention`)."""
    return (f"{who} is answering <b>{esc(request.title)}</b>: {steps} "
            f"step{'s' if steps > 1 else ''}. /cancel or the button stops without answering.")


def for_whom(user_id: int, name: str | None, text: str) -> str:
    """A typed step in a group, addressed to the one person answering."""
    return f'<a href="tg://user?id={user_id}">{esc(name if name is not None else "you")}</a>: ' + text


def why_reject(who: str, request: Request, wait: timedelta | None) -> str:
    text = (f"{who}, why reject <b>{esc(request.title)}</b>? Reply to this message with a "
            "reason, or press ❌ Reject again to reject without one.")
    if wait is not None:
        text += f" With no reply within {format_duration(wait)}, it is rejected without one."
    return text


def rejected_without_reason(request: Request) -> str:
    return f"No reason came in time: {esc(request.title)} is rejected without one."


def greeting(first_name: str, user_id: int) -> str:
    return (f"Hi {esc(first_name)}! Requests for you will appear here. "
            f"Your Telegram id is <code>{user_id}</code> (use <code>telegram:{user_id}</code> "
            "in the bridge's routes and responders). /pending lists what waits for an answer here.")


def waiting_list(waiting: Sequence[Request], listed: int) -> str:
    """The /pending answer: how many wait, the first `listed` by name (and deadline)."""
    lines = [f"⏳ <b>{len(waiting)}</b> waiting for an answer here:"]
    for request in waiting[:listed]:
        due = f" (answer by {when(request.deadline)})" if request.deadline else ""
        lines.append(f"• {esc(label(request.title))}{due}")
    if len(waiting) > listed:
        lines.append(f"…and {len(waiting) - listed} more.")
    lines.append("Press one to show it again below.")
    return "\n".join(lines)
