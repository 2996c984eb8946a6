"""Modal views (answer, reject reason, full details) and the reading of their submissions.

`private_metadata` holds only where the modal came from (request id, channel, message
ts) — never an answer, so a secret typed into a modal exists only in the submission.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from adapters.slack.text import escape, mrkdwn, plain, show_value, truncate
from bridge.models import Request
from bridge.questions import FormField, InvalidAnswer, Question, QuestionKind

ANSWER_CALLBACK = "hitl:answer"
REJECT_CALLBACK = "hitl:reject"
DETAILS_CALLBACK = "hitl:details"
VALUE = "v"  # action_id of every input element
REASON_BLOCK = "reason"
INPUT_CHARS = 3000  # Slack's plain_text_input max_length
MAX_OPTIONS_AS_CHECKBOXES = 10


@dataclass(frozen=True)
class ModalOrigin:
    """Where a modal was opened from (kept in `private_metadata`)."""

    request_id: str
    channel: str = ""
    message_ts: str = ""

    def dump(self) -> str:
        return json.dumps({"r": self.request_id, "c": self.channel, "t": self.message_ts})

    @classmethod
    def load(cls, text: str) -> ModalOrigin | None:
        """The origin, or None when the metadata is not ours (forged or foreign)."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or not isinstance(data.get("r"), str):
                return None
            return cls(data["r"], str(data.get("c", "")), str(data.get("t", "")))
        except ValueError:
            return None


def block_id_for(question: Question, field: FormField | None = None) -> str:
    return f"q:{question.id}" if field is None else f"q:{question.id}:{field.name}"


def answer_modal(request: Request, origin: ModalOrigin) -> dict[str, Any]:
    """One modal holding an input for every question of `request`."""
    blocks: list[dict[str, Any]] = [{"type": "section", "text": mrkdwn(
        f"*{escape(truncate(request.title, 500))}*")}]
    for question in request.questions:
        blocks.extend(_inputs(question))
    if any(q.kind is QuestionKind.secret for q in request.questions):
        blocks.append({"type": "context", "elements": [mrkdwn(
            ":lock: A secret is sent straight to the agent. It is not shown in the channel, "
            "not logged, and stored only encrypted.")]})
    return {
        "type": "modal",
        "callback_id": ANSWER_CALLBACK,
        "private_metadata": origin.dump(),
        "title": plain("Answer request", 24),
        "submit": plain("Submit", 24),
        "close": plain("Cancel", 24),
        "blocks": blocks[:100],
    }


def reject_modal(request: Request, origin: ModalOrigin) -> dict[str, Any]:
    """Asks for an optional reason before rejecting."""
    return {
        "type": "modal",
        "callback_id": REJECT_CALLBACK,
        "private_metadata": origin.dump(),
        "title": plain("Reject request", 24),
        "submit": plain("Reject", 24),
        "close": plain("Cancel", 24),
        "blocks": [
            {"type": "section", "text": mrkdwn(f"Reject *{escape(truncate(request.title, 500))}*?")},
            {"type": "input", "block_id": REASON_BLOCK, "optional": True,
             "label": plain("Reason (optional)", 2000),
             "element": {"type": "plain_text_input", "action_id": VALUE, "multiline": True,
                         "max_length": 2000}},
        ],
    }


def details_modal(request: Request) -> dict[str, Any]:
    """The full context and tool arguments, in chunks within the section limit."""
    text = json.dumps({"tool": request.tool, **request.context} if request.tool else request.context,
                      indent=2, ensure_ascii=False, default=str)
    chunks = [text[i : i + 2900] for i in range(0, len(text), 2900)][:99]
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": mrkdwn(f"```{escape(chunk)}```")} for chunk in chunks]
    if len(text) > 2900 * 99:
        blocks.append({"type": "context", "elements": [mrkdwn("(too long to show in Slack)")]})
    return {"type": "modal", "callback_id": DETAILS_CALLBACK,
            "title": plain("Request details", 24), "close": plain("Close", 24), "blocks": blocks}


def _options(options: list[str]) -> list[dict[str, Any]]:
    return [{"text": plain(o, 75), "value": str(i)} for i, o in enumerate(options)]


def _inputs(question: Question) -> list[dict[str, Any]]:
    label = plain(question.prompt, 2000)
    optional = not question.required
    element: dict[str, Any]
    kind = question.kind
    if kind is QuestionKind.form:
        return [_field_input(question, f) for f in question.fields]
    if kind is QuestionKind.confirm:
        element = {"type": "radio_buttons", "action_id": VALUE,
                   "options": [{"text": plain("Approve", 75), "value": "yes"},
                               {"text": plain("Reject", 75), "value": "no"}]}
    elif kind is QuestionKind.choice:
        element = {"type": "static_select", "action_id": VALUE,
                   "placeholder": plain("Choose…", 150), "options": _options(question.options)}
    elif kind is QuestionKind.multi_choice:
        optional = True  # an empty choice is checked against `required` on submit
        many = len(question.options) > MAX_OPTIONS_AS_CHECKBOXES
        element = {"type": "multi_static_select" if many else "checkboxes", "action_id": VALUE,
                   "options": _options(question.options)}
        if many:
            element["placeholder"] = plain("Choose…", 150)
    elif kind is QuestionKind.edit:
        initial = json.dumps(question.default, indent=2, ensure_ascii=False) \
            if question.default is not None else ""
        element = {"type": "plain_text_input", "action_id": VALUE, "multiline": True,
                   "max_length": INPUT_CHARS}
        if initial and len(initial) <= INPUT_CHARS:
            element["initial_value"] = initial
    else:  # text, secret
        element = {"type": "plain_text_input", "action_id": VALUE,
                   "multiline": kind is QuestionKind.text, "max_length": INPUT_CHARS}
    block: dict[str, Any] = {"type": "input", "block_id": block_id_for(question), "label": label,
                             "optional": optional, "element": element}
    hint = question.help_text or ("Edit the JSON, then submit." if kind is QuestionKind.edit else "")
    if kind is QuestionKind.secret:
        hint = "Not shown to anyone, not stored in clear. " + question.help_text
    if hint:
        block["hint"] = plain(hint, 2000)
    return [block]


def _field_input(question: Question, field: FormField) -> dict[str, Any]:
    element: dict[str, Any]
    if field.options:
        element = {"type": "static_select", "action_id": VALUE,
                   "placeholder": plain("Choose…", 150), "options": _options(field.options)}
    else:
        element = {"type": "plain_text_input", "action_id": VALUE, "multiline": field.multiline,
                   "max_length": INPUT_CHARS}
    return {"type": "input", "block_id": block_id_for(question, field),
            "label": plain(field.label or field.name, 2000), "optional": not field.required,
            "element": element}


# reading submissions ---------------------------------------------------------------------------
def _element_value(state: Any) -> Any:
    """The raw value of one element's state: text, one option value, or a list of them."""
    if not isinstance(state, dict):
        return None
    if "selected_options" in state:
        selected = state.get("selected_options") or []
        return [o.get("value") for o in selected if isinstance(o, dict)]
    if "selected_option" in state:
        option = state.get("selected_option")
        return option.get("value") if isinstance(option, dict) else None
    value = state.get("value")
    return value if isinstance(value, str) or value is None else None


def _pick(options: list[str], raw: Any) -> Any:
    """Option indices (as sent in `value`) back to option text; unknown ones stay invalid."""
    def one(item: Any) -> Any:
        if isinstance(item, str) and item.isdigit() and int(item) < len(options):
            return options[int(item)]
        return f"<unknown option {str(item)[:20]}>"
    if isinstance(raw, list):
        return [one(i) for i in raw]
    return None if raw is None else one(raw)


def read_submission(
    request: Request, state_values: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    """Answer values per question from `view.state.values`, and errors per block id (shown
    inline with `response_action: errors`). Values are validated by the model."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    states = state_values if isinstance(state_values, dict) else {}

    def raw(block_id: str) -> Any:
        block = states.get(block_id)
        return _element_value(block.get(VALUE)) if isinstance(block, dict) else None

    for question in request.questions:
        block_id = block_id_for(question)
        value: Any
        if question.kind is QuestionKind.form:
            value = {}
            for field in question.fields:
                field_raw = raw(block_id_for(question, field))
                if field.options:
                    field_raw = _pick(field.options, field_raw)
                if field_raw not in (None, ""):
                    value[field.name] = field_raw
                elif field.required:
                    errors[block_id_for(question, field)] = "required"
            if any(k.startswith(block_id + ":") for k in errors):
                continue
        elif question.kind in (QuestionKind.choice, QuestionKind.multi_choice):
            value = _pick(question.options, raw(block_id))
            if question.kind is QuestionKind.multi_choice and value is None:
                value = []
        else:
            value = raw(block_id)
        if value is None and not question.required:
            continue
        try:
            values[question.id] = question.validate_answer(value)
        except InvalidAnswer as exc:
            target = block_id
            if question.kind is QuestionKind.form and question.fields:
                named = [f for f in question.fields if f"{f.name!r}" in exc.reason]
                target = block_id_for(question, named[0] if named else question.fields[0])
            errors[target] = truncate(exc.reason, 150)
    return values, errors


def read_reason(state_values: Any) -> str | None:
    """The optional reason typed into the reject modal."""
    if not isinstance(state_values, dict):
        return None
    block = state_values.get(REASON_BLOCK)
    value = _element_value(block.get(VALUE)) if isinstance(block, dict) else None
    if not isinstance(value, str) or not value.strip():
        return None
    return truncate(value.strip(), 2000)


def describe(values: dict[str, Any], secret_ids: set[str]) -> str:
    """A short, secret-free summary of submitted values (for audit notes)."""
    return truncate(", ".join(
        f"{k}={'[secret]' if k in secret_ids else show_value(v)}" for k, v in values.items()
    ), 300)
