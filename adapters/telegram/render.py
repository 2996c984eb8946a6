"""Request → Telegram message text (parse mode HTML). Pure functions, no network.

Everything that came from an engine or a person is escaped; the result always fits
Telegram's 4,096-character limit (long context and description are cut first, with a
visible "…truncated" marker), measured in UTF-16 code units as Telegram counts them.
An open request's message also shows its timing notes (votes so far, escalations: the
plain-text lines of `bridge.timing_view.timing_notes`, which the channel reads and passes
in); a closed one shows just the outcome.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Any

from bridge.models import GrantMade, Request
from bridge.outcome import OutcomeKind, outcome_of
from bridge.questions import FormField, Question, QuestionKind

TEXT_LIMIT = 4096
CUT_MARK = "…(truncated)"
MAX_NOTES = 8  # timing notes shown; the rest are counted ("…and 3 more")
MAX_NOTE_UNITS = 300  # one note line at most, as rendered (escaped, UTF-16 units)
KIND_HINT = {
    QuestionKind.confirm: "approve or reject",
    QuestionKind.choice: "pick one",
    QuestionKind.multi_choice: "pick any, then Done",
    QuestionKind.text: "reply with text",
    QuestionKind.secret: "secret: answered in a private chat, never shown",
    QuestionKind.form: "a few fields, asked one by one",
    QuestionKind.edit: "reply with the edited JSON",
}


def utf16_len(text: str) -> int:
    """Length as Telegram counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


def esc(text: Any) -> str:
    """Escape user-supplied text for parse mode HTML."""
    return escape(str(text), quote=False)


@dataclass
class Part:
    """A piece of a message: `template` with `{}` for the escaped `raw` text.

    `cut_order` > 0 marks parts that may be shortened, lowest first; 0 never shrinks.
    """

    template: str
    raw: str = ""
    cut_order: int = 0

    def render(self, keep: int | None = None) -> str:
        raw = self.raw if keep is None or keep >= len(self.raw) else self.raw[:keep] + CUT_MARK
        return self.template.format(esc(raw))


def fit(parts: list[Part], limit: int = TEXT_LIMIT) -> str:
    """Join the parts, shortening the shrinkable ones (in cut order) until it fits `limit`."""
    keep: dict[int, int | None] = {i: None for i in range(len(parts))}

    def joined() -> str:
        return "".join(p.render(keep[i]) for i, p in enumerate(parts))

    text = joined()
    if utf16_len(text) <= limit:
        return text
    order = sorted((i for i, p in enumerate(parts) if p.cut_order > 0), key=lambda i: parts[i].cut_order)
    for i in order:
        keep[i] = 0
        if utf16_len(joined()) > limit:
            continue
        lo, hi = 0, len(parts[i].raw)  # the longest prefix that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            keep[i] = mid
            if utf16_len(joined()) <= limit:
                lo = mid
            else:
                hi = mid - 1
        keep[i] = lo
        return joined()
    # still too long with every shrinkable part emptied: hard cut on the plain text
    return fit([Part("{}", "".join(p.raw for p in parts), cut_order=1)], limit)


def when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else ""


def question_line(question: Question, number: int | None = None) -> list[Part]:
    """The prompt of one question with a hint of how to answer it."""
    head = f"<b>{number}.</b> " if number is not None else "❓ "
    parts = [Part(head + "{}", question.prompt, cut_order=3)]
    parts.append(Part(" <i>({})</i>", KIND_HINT[question.kind]))
    if question.help_text:
        parts.append(Part("\n<i>{}</i>", question.help_text, cut_order=2))
    if question.kind is QuestionKind.edit and question.default is not None:
        parts.append(Part("\n<pre>{}</pre>", _json(question.default), cut_order=1))
    parts.append(Part("\n"))
    return parts


def request_parts(request: Request, notes: Sequence[str] = ()) -> list[Part]:
    """Title, description, questions, context, deadline and timing notes, in that order."""
    parts = [Part("<b>{}</b>\n", request.title, cut_order=4)]
    origin = " · ".join(x for x in (request.engine, request.agent, request.run_id, request.tool) if x)
    if origin:
        parts.append(Part("<i>{}</i>\n", origin, cut_order=3))
    if request.description:
        parts.append(Part("{}\n", request.description, cut_order=2))
    parts.append(Part("\n"))
    numbered = len(request.questions) > 1
    for n, question in enumerate(request.questions, 1):
        parts += question_line(question, n if numbered else None)
    if request.context:
        parts.append(Part("\n<pre>{}</pre>\n", _json(request.context), cut_order=1))
    if request.deadline:
        parts.append(Part("\n⏰ Answer by {}", when(request.deadline)))
    parts += note_parts(notes)
    return parts


def note_parts(notes: Sequence[str]) -> list[Part]:
    """The timing notes, one escaped line each: at most `MAX_NOTES` lines of at most
    `MAX_NOTE_UNITS` as rendered, so they never crowd the question out of the message."""
    parts = [Part("\n{}", _cut_rendered(note, MAX_NOTE_UNITS)) for note in notes[:MAX_NOTES]]
    if len(notes) > MAX_NOTES:
        parts.append(Part(f"\n…and {len(notes) - MAX_NOTES} more"))
    return parts


def _cut_rendered(text: str, limit: int) -> str:
    """The longest prefix of `text` (plus "…" when cut) whose escaped form fits `limit`."""
    if utf16_len(esc(text)) <= limit:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if utf16_len(esc(text[:mid]) + "…") <= limit:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + "…"


def request_text(request: Request, note: str = "", notes: Sequence[str] = ()) -> str:
    """The message showing an open request: the request, its timing `notes` (plain-text
    lines, escaped here) and `note` (plain text, how to answer) at the end."""
    parts = request_parts(request, notes)
    if note:
        parts.append(Part("\n\n{}", note))
    return fit(parts)


def outcome_line(request: Request) -> str:
    """One line (HTML) saying how the request ended, by whom and when (the core's words,
    `bridge.outcome`), then the answer's values, secrets hidden."""
    ended = outcome_of(request)
    if ended is None:
        return ""
    at = when(ended.at)
    if ended.kind in (OutcomeKind.cancelled, OutcomeKind.failed):
        if ended.kind is OutcomeKind.failed:
            return f"⚠️ {ended.headline}: {esc(ended.reason or 'unknown error')}"
        why = f": {esc(ended.reason)}" if ended.reason else ""
        return f"🚫 {ended.headline} at {at}{why}"
    if ended.kind is OutcomeKind.expired:
        return f"⌛ {ended.headline} at {at}"
    icon = {OutcomeKind.expired_with_default: "⌛", OutcomeKind.rejected: "❌"}.get(
        ended.kind, "🔒" if ended.secret else "✅")
    if ended.automatic:
        icon = "🤖"
    head = f"{icon} {esc(ended.words())} at {at}{granted_tail(ended.grant)}"
    values = request.redacted_answer() or {}
    shown = [f"{esc(k)}: {esc(_short(v))}" for k, v in values.items() if not _is_confirm(request, k)]
    tail = ("\n" + "\n".join(shown)) if shown else ""
    reason = f"\nReason: {esc(ended.reason)}" if ended.reason else ""
    return head + reason + tail


def granted_tail(grant: GrantMade | None) -> str:
    """After "Allowed for 1 hour by Ann at …": when the grant stops, and its pattern."""
    if grant is None:
        return ""
    until = f" — until {when(grant.expires_at)}" if grant.expires_at else ""
    return until + (f"\nPattern: <code>{esc(grant.pattern)}</code>" if grant.pattern else "")


def closed_text(request: Request) -> str:
    """The message after the request closed: the request, then the outcome (no timing
    notes: votes and escalations no longer matter once it is decided)."""
    parts = request_parts(request)
    parts.append(Part("\n\n" + outcome_line(request).replace("{", "{{").replace("}", "}}")))
    return fit(parts)


def step_text(request: Request, question: Question, field: FormField | None, step: int, total: int) -> str:
    """One step of a one-question-after-another session."""
    label = field.label or field.name if field else question.prompt
    parts = [Part(f"<b>{step}/{total}</b> · " + "{}", request.title, cut_order=2), Part("\n")]
    parts.append(Part("{}", label, cut_order=1))
    if field is not None and not field.required:
        parts.append(Part("\n<i>(optional: send - to skip)</i>"))
    elif field is None and question.kind is not QuestionKind.form:
        parts.append(Part(" <i>({})</i>", KIND_HINT[question.kind]))
    if question.kind is QuestionKind.edit and question.default is not None:
        parts.append(Part("\n<pre>{}</pre>", _json(question.default), cut_order=1))
    return fit(parts)


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def _is_confirm(request: Request, question_id: str) -> bool:
    question = request.question(question_id)
    return question is not None and question.kind is QuestionKind.confirm and len(request.questions) == 1
