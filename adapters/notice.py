"""The words of a phone notification, shared by the channels that notify in place (Web
Push, ntfy): pure functions, no I/O. A notification is short: a title that says what is
asked, a body with who asks and by when, and once the request is closed how it ended."""

from __future__ import annotations

from dataclasses import dataclass

from adapters.email.message import label, one_line
from bridge.models import Request
from bridge.outcome import outcome_of

MAX_TITLE = 120
MAX_BODY = 300


@dataclass(frozen=True)
class Notice:
    title: str
    body: str


def request_notice(request: Request, *, reminder: bool = False) -> Notice:
    """`Approval: Deploy api v2 to prod` / `agent deployer · by 14:30 UTC · Rolls out…`."""
    prefix = "Reminder — " if reminder else ("Escalated — " if request.escalation_level else "")
    title = one_line(f"{prefix}{label(request)}: {request.title}", MAX_TITLE)
    facts = [f"{k} {v}" for k, v in (("agent", request.agent), ("tool", request.tool),
                                     ("workspace", request.workspace)) if v]
    if request.deadline is not None:
        facts.append(f"by {request.deadline.strftime('%H:%M UTC')}")
    lead = " · ".join(facts)
    text = (lead + (" — " if lead and request.description else "") + (request.description or "")) or "Open to answer."
    return Notice(title, one_line(text, MAX_BODY))


def closed_notice(request: Request) -> Notice:
    """`Approved by ana — Deploy api v2 to prod`: what replaces the question once it is closed."""
    ended = outcome_of(request)
    headline = ended.headline if ended is not None else "Closed"
    return Notice(one_line(f"{headline} — {request.title}", MAX_TITLE),
                  one_line(ended.sentence if ended is not None else "Nothing left to answer.", MAX_BODY))
