"""Build the mails (pure functions, no I/O): a subject that says what and by when, a plain
text and an HTML part with the whole request, one answer link per recipient, and the
headers that thread reminders and escalations under the first mail."""

from __future__ import annotations

import email.policy
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Literal

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from bridge.models import Request
from bridge.outcome import OutcomeKind
from bridge.outcome import outcome_of as outcome_of_request
from bridge.questions import QuestionKind, fit_json

Kind = Literal["new", "reminder", "resolved"]
TEMPLATES = Path(__file__).parent / "templates"
MAX_SUBJECT = 180
MAX_CONTEXT_ITEMS = 40
MAX_VALUE = 400

#: fold headers only past RFC 5322's 998: a folded subject comes back with a leading space
POLICY = email.policy.default.clone(max_line_length=998)
_env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]),
                   undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


@dataclass(frozen=True)
class Thread:
    """The first mail of a request to one recipient: later mails reply to it."""

    message_id: str
    subject: str


def one_line(text: str, limit: int) -> str:
    """Header-safe: no line breaks (a title cannot add headers), cut to `limit`."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def label(request: Request) -> str:
    kinds = {q.kind for q in request.questions}
    if QuestionKind.confirm in kinds:
        return "Approval"
    if kinds == {QuestionKind.secret}:
        return "Secret needed"
    return "Question"


def subject_of(request: Request) -> str:
    """`[Approval] Deploy api v2 to prod — by 14:30 UTC`."""
    due = f" — by {request.deadline.strftime('%H:%M UTC')}" if request.deadline else ""
    if request.deadline and request.created_at and request.deadline.date() != request.created_at.date():
        due = f" — by {request.deadline.strftime('%b %d %H:%M UTC')}"
    return one_line(f"[{label(request)}] {request.title}", MAX_SUBJECT - len(due)) + due


def context_rows(request: Request) -> list[tuple[str, str]]:
    """Who and what the request is about, then its context, as short key/value lines."""
    rows = [(k, v) for k, v in (("engine", request.engine), ("agent", request.agent), ("tool", request.tool),
                                 ("workspace", request.workspace), ("run", request.run_id)) if v]
    rows += [(f"label {k}", v) for k, v in request.labels.items()]
    for key, value in list(request.context.items())[:MAX_CONTEXT_ITEMS]:
        shown = value if isinstance(value, str) else fit_json(value, 3, MAX_VALUE)
        text = shown if isinstance(shown, str) else _compact(shown)
        rows.append((str(key)[:100], one_line(text, MAX_VALUE) if "\n" not in text else text[:MAX_VALUE]))
    return rows


def _compact(value: object) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


def request_mail(request: Request, *, to: Address, sender: Address, link: str, kind: Kind,
                 thread: Thread | None, now: datetime, note: str = "",
                 offers: Sequence[str] = ()) -> EmailMessage:
    """The mail to one recipient. `thread` set: a reply in the first mail's thread. `offers`:
    the labels of the standing approvals the answer page shows next to Approve."""
    subject = subject_of(request) if thread is None else thread.subject
    if kind == "reminder":
        subject = "Reminder: " + subject
    elif kind == "resolved":
        subject = "Resolved: " + subject
    elif thread is None and request.escalation_level:
        subject = one_line(subject + " (escalated to you)", MAX_SUBJECT + 30)
    if thread is not None and not subject.lower().startswith("re:"):
        subject = "Re: " + subject
    view = {
        "r": request, "kind": kind, "link": link, "note": note, "label": label(request),
        "rows": context_rows(request), "deadline": request.deadline.strftime("%Y-%m-%d %H:%M UTC")
        if request.deadline else "",
        "secret": bool(request.secret_question_ids),
        "outcome": "" if request.is_open else outcome_of(request),
        "offers": list(offers) if request.is_open else [],
    }
    msg = EmailMessage(policy=POLICY)
    msg["Subject"] = subject
    msg["From"] = sender
    msg["To"] = to
    msg["Date"] = format_datetime(now)
    msg["Message-ID"] = make_msgid(domain=sender.domain or None)
    msg["Auto-Submitted"] = "auto-generated"
    msg["X-Hitl-Request-Id"] = request.id
    if thread is not None:
        msg["In-Reply-To"] = thread.message_id
        msg["References"] = thread.message_id
    msg.set_content(_env.get_template("request.txt").render(**view))
    msg.add_alternative(_env.get_template("request.html").render(**view), subtype="html")
    return msg


def outcome_of(request: Request) -> str:
    """How a closed request ended, as one sentence (the core's words, `bridge.outcome`):
    "Approved by ana at 14:02 UTC"."""
    ended = outcome_of_request(request)
    if ended is None:
        return ""
    if ended.answered or ended.kind is OutcomeKind.expired_with_default:
        at = f" at {ended.at.strftime('%H:%M UTC')}" if ended.at else ""
        reason = f" — {ended.reason}" if ended.reason else ""
        grant = ended.grant
        until = f" (until {grant.expires_at.strftime('%Y-%m-%d %H:%M UTC')})" if grant and grant.expires_at else ""
        return f"{ended.headline}{at}{until}{reason}"
    return ended.headline + (f": {ended.reason}" if ended.reason else "")
