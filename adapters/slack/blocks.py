"""Block Kit for request messages: pure functions from the request model to Slack JSON.

Controls carry the request id in their `block_id` (`hitl:<request id>`) and what was
pressed in `action_id`; nothing secret is ever put in a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapters.slack.text import clock, escape, mrkdwn, plain, show_value, slack_date, truncate, who
from bridge.models import GrantMade, Request
from bridge.outcome import OutcomeKind, outcome_of
from bridge.policy import GrantOffer
from bridge.questions import Question, QuestionKind

ACTION_PREFIX = "hitl:"
APPROVE = "hitl:approve"
REJECT = "hitl:reject"
CHOICE = "hitl:choice"  # + ":<index>"
SELECT = "hitl:select"
OPEN_MODAL = "hitl:open"
DETAILS = "hitl:details"
GRANT = "hitl:grant"  # + ":<offer key>"; the value repeats the key (bridge.policy.GrantOffer.key)
MAX_BUTTON_CHOICES = 5
MAX_FIELDS = 10
FIELD_VALUE_CHARS = 300
METADATA_EVENT = "hitl_request"
MAX_NOTES = 8
MAX_NOTE_CHARS = 300

_OPEN_LABELS = {
    QuestionKind.text: "Reply",
    QuestionKind.secret: "Provide secret",
    QuestionKind.edit: "Review and edit",
    QuestionKind.multi_choice: "Choose…",
    QuestionKind.form: "Fill in",
}


def controls_block_id(request_id: str) -> str:
    return f"{ACTION_PREFIX}{request_id}"


def request_id_from_block(block_id: str) -> str | None:
    """The request id of a control's block, or None when the block is not ours."""
    if not block_id.startswith(ACTION_PREFIX):
        return None
    rid = block_id[len(ACTION_PREFIX):]
    return rid or None


def fallback_text(request: Request) -> str:
    """The notification text (shown in push notifications and screen readers). Slack reads
    it as mrkdwn too, so the engine's title is escaped like every other engine string."""
    return truncate(f"Input needed: {escape(request.title)}", 3000)


def reminder_text(request: Request) -> str:
    """The reminder posted in a request's thread."""
    due = f" (answer by {slack_date(request.deadline)})" if request.deadline else ""
    return f":bell: Reminder: this request is still waiting for an answer{due}."


def message_metadata(request: Request, target: str) -> dict[str, Any]:
    """Message metadata so a restarted bridge can find and adopt its own post."""
    return {"event_type": METADATA_EVENT,
            "event_payload": {"request_id": request.id, "target": target}}


def request_blocks(request: Request, notes: Sequence[str] = (),
                   offers: Sequence[GrantOffer] = ()) -> list[dict[str, Any]]:
    """The whole message for `request`: controls while open (with its timing notes: votes
    so far, escalations), the outcome once closed. `notes` are the plain-text lines of
    `bridge.timing_view.timing_notes` (escaped here); `offers` the standing approvals shown
    next to Approve (`BridgeAPI.grant_offers`)."""
    blocks = _summary_blocks(request)
    if request.is_open:
        blocks.extend(_question_blocks(request))
        blocks.append(_controls(request, offers))
        if notes:
            blocks.append(_notes(notes))
        blocks.append(_footer(request))
    else:
        blocks.append({"type": "section", "text": mrkdwn(outcome_text(request))})
    return blocks


def _summary_blocks(request: Request) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "header", "text": plain(request.title, 150)}]
    if request.description:
        blocks.append({"type": "section", "text": mrkdwn(escape(request.description))})
    where = [
        f"{label} `{escape(truncate(value, 200))}`"
        for label, value in (("engine", request.engine), ("workspace", request.workspace),
                             ("run", request.run_id), ("agent", request.agent))
        if value
    ]
    if where:
        blocks.append({"type": "context", "elements": [mrkdwn(" · ".join(where))]})
    fields, cut = argument_fields(request)
    if fields:
        section: dict[str, Any] = {"type": "section", "fields": fields}
        if cut and request.is_open:
            section["accessory"] = {"type": "button", "action_id": DETAILS,
                                    "text": plain("Full details", 75), "value": request.id}
        blocks.append(section)
    return blocks


def argument_fields(request: Request) -> tuple[list[dict[str, Any]], bool]:
    """Tool name and context values as section fields; True when something was cut short
    (then the full text is reachable through the details modal)."""
    items: list[tuple[str, str]] = []
    if request.tool:
        items.append(("tool", request.tool))
    items.extend((str(k), show_value(v)) for k, v in request.context.items())
    cut = len(items) > MAX_FIELDS
    fields = []
    for key, value in items[:MAX_FIELDS]:
        if len(value) > FIELD_VALUE_CHARS or len(key) > 100:
            cut = True
        text = f"*{escape(truncate(key, 100))}*\n{escape(truncate(value, FIELD_VALUE_CHARS))}"
        fields.append(mrkdwn(text, 2000))
    return fields, cut


def _question_blocks(request: Request) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for question in request.questions[:20]:
        blocks.append({"type": "section", "text": mrkdwn(escape(question.prompt))})
        if question.help_text:
            blocks.append({"type": "context", "elements": [mrkdwn(escape(question.help_text))]})
    if len(request.questions) > 20:
        more = len(request.questions) - 20
        blocks.append({"type": "context", "elements": [mrkdwn(f"…and {more} more in the form")]})
    return blocks


def inline_question(request: Request) -> Question | None:
    """The question answered right in the message (a lone confirm or choice), if any."""
    if len(request.questions) == 1 and request.questions[0].kind in (
        QuestionKind.confirm, QuestionKind.choice,
    ):
        return request.questions[0]
    return None


def _controls(request: Request, offers: Sequence[GrantOffer] = ()) -> dict[str, Any]:
    question = inline_question(request)
    elements: list[dict[str, Any]]
    if question is not None and question.kind is QuestionKind.confirm:
        elements = [
            {"type": "button", "action_id": APPROVE, "style": "primary",
             "text": plain("Allow once" if offers else "Approve", 75), "value": request.id},
            *(grant_button(offer) for offer in offers),
            {"type": "button", "action_id": REJECT, "style": "danger",
             "text": plain("Reject", 75), "value": request.id},
        ]
    elif question is not None and len(question.options) <= MAX_BUTTON_CHOICES:
        elements = [
            {"type": "button", "action_id": f"{CHOICE}:{i}", "text": plain(option, 75),
             "value": str(i)}
            for i, option in enumerate(question.options)
        ]
    elif question is not None:
        elements = [{
            "type": "static_select", "action_id": SELECT,
            "placeholder": plain("Choose…", 150),
            "options": [{"text": plain(option, 75), "value": str(i)}
                        for i, option in enumerate(question.options)],
        }]
    else:
        kinds = {q.kind for q in request.questions}
        label = _OPEN_LABELS.get(next(iter(kinds)), "Answer") if len(kinds) == 1 else "Answer"
        elements = [{"type": "button", "action_id": OPEN_MODAL, "style": "primary",
                     "text": plain(label, 75), "value": request.id}]
    return {"type": "actions", "block_id": controls_block_id(request.id), "elements": elements}


def grant_button(offer: GrantOffer) -> dict[str, Any]:
    """One standing-approval button: its key (at most 14 characters) in the action id and
    the value; "Always allow this" opens a modal to narrow the pattern first."""
    return {"type": "button", "action_id": f"{GRANT}:{offer.key}", "text": plain(offer.label, 75),
            "value": offer.key}


def grant_key(action_id: str) -> str | None:
    """The offer key a grant button's action id names, or None when it is not one."""
    prefix = GRANT + ":"
    return action_id[len(prefix):] if action_id.startswith(prefix) else None


def _notes(notes: Sequence[str]) -> dict[str, Any]:
    """The timing notes, one line each, under the controls."""
    lines = [escape(truncate(note, MAX_NOTE_CHARS)) for note in notes[:MAX_NOTES]]
    if len(notes) > MAX_NOTES:
        lines.append(f"…and {len(notes) - MAX_NOTES} more")
    return {"type": "context", "elements": [mrkdwn("\n".join(lines))]}


def _footer(request: Request) -> dict[str, Any]:
    parts = []
    if request.deadline is not None:
        parts.append(f"Answer by {slack_date(request.deadline)}")
    parts.append(f"Request `{request.id}`")
    return {"type": "context", "elements": [mrkdwn(" · ".join(parts))]}


def outcome_text(request: Request) -> str:
    """One line saying how the request ended (the core's words, `bridge.outcome`); never
    shows a secret value."""
    ended = outcome_of(request)
    if ended is None:
        return ""
    kind = ended.kind
    at = clock(ended.at, request.created_at) if ended.at else ""
    if kind in (OutcomeKind.cancelled, OutcomeKind.failed):
        reason = f": {escape(truncate(ended.reason, 500))}" if ended.reason else ""
        if kind is OutcomeKind.failed:
            return f":warning: {ended.headline}{reason}"
        return f":no_entry_sign: {ended.headline} at {at}{reason}"
    if kind is OutcomeKind.expired:
        return f":alarm_clock: {ended.headline} at {at}"
    if kind is OutcomeKind.expired_with_default:
        return f":alarm_clock: {ended.headline} at {at} ({_short_values(request)})"
    answer = request.answer
    by = who(answer.responder) if answer is not None else escape(ended.who)
    chosen = f"*{escape(truncate(ended.choice, 200))}*" if ended.choice is not None else None
    reason = f" — reason: {escape(truncate(ended.reason, 500))}" if ended.reason and not ended.secret else ""
    icon = {OutcomeKind.rejected: ":x:"}.get(kind, ":lock:" if ended.secret else ":white_check_mark:")
    if ended.automatic:
        icon = ":robot_face:"
    return f"{icon} {ended.words(who=by, choice=chosen)} at {at}{_granted(ended.grant, request)}{reason}"


def _granted(grant: GrantMade | None, request: Request) -> str:
    """After "Allowed for 1 hour by …": the pattern of the grant and when it stops."""
    if grant is None:
        return ""
    until = f" — until {clock(grant.expires_at, request.created_at)}" if grant.expires_at else ""
    pattern = f" · `{escape(truncate(grant.pattern, 200))}`" if grant.pattern else ""
    return until + pattern


def _short_values(request: Request) -> str:
    values = request.redacted_answer() or {}
    return escape(truncate(", ".join(f"{k}={show_value(v)}" for k, v in values.items()), 300))
