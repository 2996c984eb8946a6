"""What the inbox shows of a request: plain data for the templates (pure functions).

Nothing here returns a secret: answers go through `Request.redacted_answer()`, audit events
are already redacted by the core, and the callback secret and `source_ref` are never read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bridge.models import Event, Request, RequestState
from bridge.outcome import closed_error
from bridge.questions import QuestionKind
from bridge.store.base import OutboxItem, Vote

# the state filter of the list: a name in the URL → the states it shows
STATE_VIEWS: dict[str, tuple[RequestState, ...]] = {
    "open": (RequestState.pending, RequestState.posted),
    "answered": (RequestState.answered, RequestState.delivered),
    "expired": (RequestState.expired,),
    "cancelled": (RequestState.cancelled,),
    "failed": (RequestState.failed,),
    "all": (),
}

def countdown(deadline: datetime | None, now: datetime) -> str:
    """`in 29 min`, `in 45 s`, `overdue by 3 min`; minute granularity past a minute."""
    if deadline is None:
        return "no deadline"
    seconds = int((deadline - now).total_seconds())
    text = _span(abs(seconds))
    return f"in {text}" if seconds >= 0 else f"overdue by {text}"


def _span(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{hours // 24} d {hours % 24} h"


def when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S UTC") if at else ""


def clock(at: datetime | None, now: datetime) -> str:
    """`14:02 UTC` today, `22 Nov 14:02 UTC` this year, else with the year (pages turn it
    into the reader's own time zone when JavaScript runs)."""
    if at is None:
        return ""
    if at.date() == now.date():
        return at.strftime("%H:%M UTC")
    if at.year == now.year:
        return f"{at.day} {at.strftime('%b %H:%M UTC')}"
    return f"{at.day} {at.strftime('%b %Y %H:%M UTC')}"


def ago(at: datetime, now: datetime) -> str:
    """`just now`, `3 min ago`, `2 h ago`, `4 d ago`."""
    seconds = int((now - at).total_seconds())
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 48 * 3600:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} d ago"


def short_json(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class VoteView:
    name: str
    value: str


def vote_views(request: Request, votes: list[Vote]) -> list[VoteView]:
    """Each vote as `ana: approved` (confirm questions) or `ana: region eu, note …`."""
    confirm_only = all(q.kind is QuestionKind.confirm for q in request.questions)
    out = []
    for vote in votes:
        try:
            value = json.loads(vote.value)
        except ValueError:
            value = vote.value
        if isinstance(value, dict) and confirm_only:
            shown = "rejected" if "no" in value.values() else "approved"
        elif isinstance(value, dict):
            shown = ", ".join(f"{k} {v if isinstance(v, str) else short_json(v, 100)}" for k, v in value.items())
        else:
            shown = str(value)
        out.append(VoteView(vote.name or vote.voter, shown[:300]))
    return out


@dataclass(frozen=True)
class EventView:
    at: str
    kind: str
    actor: str
    detail: str


def event_views(events: list[Event]) -> list[EventView]:
    """The audit timeline, oldest first (event data is redacted by the core)."""
    out = []
    for event in events:
        detail = ", ".join(
            f"{k}={v if isinstance(v, str) else short_json(v, 200)}"
            for k, v in event.data.items() if v not in (None, "", [], {})
        )
        out.append(EventView(when(event.at), event.kind, event.actor, detail[:600]))
    return out


@dataclass(frozen=True)
class DeliveryView:
    text: str
    last_error: str
    dead: bool


def delivery_views(items: list[OutboxItem]) -> list[DeliveryView]:
    """The write-backs still under way or given up, as sentences."""
    out = []
    for item in items:
        tries = f"{item.attempts} attempt{'s' if item.attempts != 1 else ''}"
        if item.dead:
            text = f"Gave up after {tries}: the engine does not have the {item.state} outcome."
        elif item.attempts == 0:
            text = "Sending the outcome to the engine…"
        else:
            text = f"{tries} failed; trying again at {item.due_at.strftime('%H:%M:%S UTC')}."
        out.append(DeliveryView(text, (item.last_error or "")[:500], item.dead))
    return out


def can_retry(request: Request, deliveries: list[OutboxItem]) -> bool:
    """A closed request whose write-back gave up (or that failed with an answer)."""
    if request.is_open:
        return False
    if request.state is RequestState.failed:
        return request.answer is not None
    return any(item.dead for item in deliveries)


def context_items(request: Request) -> list[tuple[str, str]]:
    """The engine fields worth showing, in reading order."""
    pairs = [("engine", request.engine), ("workspace", request.workspace), ("run", request.run_id),
             ("agent", request.agent), ("tool", request.tool)]
    items = [(k, v) for k, v in pairs if v]
    items += [(f"label {k}", v) for k, v in request.labels.items()]
    return items


def edit_default(value: Any) -> str:
    return "" if value is None else json.dumps(value, indent=2, ensure_ascii=False)


def closed_message(request: Request) -> str:
    """`already answered by X at T` (the core's wording) for a request that is not open."""
    return str(closed_error(request))
