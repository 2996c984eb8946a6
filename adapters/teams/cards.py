"""Adaptive Cards for requests: pure functions from the request model to card JSON.

Buttons are `Action.Execute` (Universal Actions): Teams sends the click to the bot as an
`adaptiveCard/action` invoke, never as a URL to open, so nothing here decides on a GET
(link previews and scanners follow URLs). Each action's `data` names the request; the
verb says what was pressed. A secret is never asked in a card: the card offers a dialog,
which opens only in a one-to-one chat with the bot.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bridge.models import Request
from bridge.outcome import outcome_of, stamp
from bridge.questions import Question, QuestionKind

CARD_TYPE = "application/vnd.microsoft.card.adaptive"
VERSION = "1.5"
APPROVE = "hitl.approve"
REJECT = "hitl.reject"
SUBMIT = "hitl.submit"
PRIVATE = "hitl.private"  # "ask me in a one-to-one chat" (a secret asked in a channel)
SECRET_DIALOG = "hitl.secret"  # task/fetch: open the secret dialog
INPUT_PREFIX = "answer."
REASON_INPUT = "reason"
MAX_FACTS = 12
FACT_CHARS = 300
ARGS_CHARS = 1500
MAX_BUTTON_CHOICES = 5


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def attachment(card: dict[str, Any]) -> dict[str, Any]:
    """A card as a message attachment."""
    return {"contentType": CARD_TYPE, "content": card}


def _card(body: list[dict[str, Any]], actions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    card: dict[str, Any] = {"type": "AdaptiveCard", "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                            "version": VERSION, "body": body}
    if actions:
        card["actions"] = actions
    return card


def _text(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "TextBlock", "text": text, "wrap": True, **extra}


def _execute(title: str, verb: str, request_id: str, style: str | None = None,
             **data: Any) -> dict[str, Any]:
    action: dict[str, Any] = {"type": "Action.Execute", "title": title, "verb": verb,
                              "data": {"request_id": request_id, **data}}
    if style:
        action["style"] = style
    return action


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _when(at: datetime) -> str:
    return stamp(at)


def inline_question(request: Request) -> Question | None:
    """The one question answered with buttons (confirm, or a short choice), if that is all it asks."""
    if len(request.questions) != 1:
        return None
    question = request.questions[0]
    if question.kind is QuestionKind.confirm:
        return question
    if question.kind is QuestionKind.choice and len(question.options) <= MAX_BUTTON_CHOICES:
        return question
    return None


def summary(request: Request) -> list[dict[str, Any]]:
    """Title, description, the tool and its arguments, context as facts, deadline."""
    body = [_text(clip(request.title, 500), weight="Bolder", size="Medium")]
    if request.description:
        body.append(_text(clip(request.description, 2000)))
    facts = []
    if request.tool:
        facts.append({"title": "Tool", "value": clip(request.tool, FACT_CHARS)})
    for key, value in list(request.context.items())[:MAX_FACTS]:
        facts.append({"title": clip(str(key), 100), "value": clip(_show(value), FACT_CHARS)})
    if request.deadline:
        facts.append({"title": "Answer by", "value": _when(request.deadline)})
    if facts:
        body.append({"type": "FactSet", "facts": facts})
    arguments = request.context.get("arguments") if isinstance(request.context, dict) else None
    if arguments is not None and not isinstance(arguments, str):
        body.append({"type": "CodeBlock", "language": "Json",
                     "codeSnippet": clip(json.dumps(arguments, indent=2, default=str), ARGS_CHARS)})
    return body


def _inputs(request: Request, question: Question) -> list[dict[str, Any]]:
    ident = INPUT_PREFIX + question.id
    label = clip(question.prompt, 500)
    if question.kind is QuestionKind.choice or question.kind is QuestionKind.multi_choice:
        return [{"type": "Input.ChoiceSet", "id": ident, "label": label, "style": "compact",
                 "isMultiSelect": question.kind is QuestionKind.multi_choice, "isRequired": question.required,
                 "choices": [{"title": clip(o, 200), "value": o} for o in question.options]}]
    if question.kind is QuestionKind.confirm:
        return [{"type": "Input.Toggle", "id": ident, "title": label, "valueOn": "yes", "valueOff": "no",
                 "value": "no"}]
    if question.kind in (QuestionKind.text, QuestionKind.edit):
        default = question.default if isinstance(question.default, str) else ""
        if question.kind is QuestionKind.edit and question.default is not None:
            default = json.dumps(question.default, indent=2, ensure_ascii=False, default=str)
        return [{"type": "Input.Text", "id": ident, "label": label, "isMultiline": True,
                 "isRequired": question.required, "value": clip(default, 5000), "maxLength": 5000}]
    if question.kind is QuestionKind.form:
        inputs: list[dict[str, Any]] = [_text(label, weight="Bolder")]
        for f in question.fields:
            ident_f, title = f"{ident}.{f.name}", clip(f.label or f.name, 200)
            if f.options:
                inputs.append({"type": "Input.ChoiceSet", "id": ident_f, "label": title, "style": "compact",
                               "isRequired": f.required, "choices": [{"title": clip(o, 200), "value": o}
                                                                     for o in f.options]})
            else:
                inputs.append({"type": "Input.Text", "id": ident_f, "label": title, "isRequired": f.required,
                               "isMultiline": f.multiline, "maxLength": 5000})
        return inputs
    return [_text(f"{label} (answered in the web inbox)", isSubtle=True)]


def _open_body(request: Request, notes: Sequence[str], personal: bool) -> tuple[list[dict[str, Any]],
                                                                               list[dict[str, Any]]]:
    body = summary(request)
    actions: list[dict[str, Any]] = []
    secret = any(q.kind is QuestionKind.secret for q in request.questions)
    inline = inline_question(request)
    if secret:
        if personal:
            body.append(_text("A secret is asked: it is typed in a dialog, never in this chat.", isSubtle=True))
            actions.append({"type": "Action.Submit", "title": "Provide secret",
                            "data": {"msteams": {"type": "task/fetch"}, "verb": SECRET_DIALOG,
                                     "request_id": request.id}})
        else:
            body.append(_text("A secret is asked: it can only be given in a one-to-one chat with the bot.",
                              isSubtle=True))
            actions.append(_execute("Answer privately", PRIVATE, request.id))
    elif inline is not None and inline.kind is QuestionKind.confirm:
        body.append(_text(clip(inline.prompt, 500)))
        body.append({"type": "Input.Text", "id": REASON_INPUT, "placeholder": "Reason (optional)",
                     "maxLength": 500})
        actions += [_execute("Approve", APPROVE, request.id, "positive"),
                    _execute("Reject", REJECT, request.id, "destructive")]
    elif inline is not None:
        body.append(_text(clip(inline.prompt, 500)))
        actions += [_execute(clip(o, 40), SUBMIT, request.id, choice=i) for i, o in enumerate(inline.options)]
    else:
        for question in request.questions:
            body.extend(_inputs(request, question))
        actions.append(_execute("Submit", SUBMIT, request.id, "positive"))
    if notes:
        body.append(_text("\n\n".join(clip(n, 300) for n in notes[:8]), isSubtle=True, size="Small"))
    return body, actions


def request_card(request: Request, notes: Sequence[str] = (), *, personal: bool = False) -> dict[str, Any]:
    """The card for `request`: its inputs and buttons while open (with the timing notes:
    the vote tally, escalations), the outcome once closed. `personal`: the card sits in a
    one-to-one chat, where a secret's dialog may open."""
    if request.is_open:
        body, actions = _open_body(request, notes, personal)
        return _card(body, actions)
    outcome = outcome_of(request)
    body = summary(request)
    if outcome is not None:
        mark = {"approved": "✅", "rejected": "❌"}.get(outcome.kind.value, "■")
        body.append(_text(clip(f"{mark} {outcome.sentence}", 1000), weight="Bolder"))
    return _card(body)


def reminder_text(request: Request) -> str:
    due = f" (answer by {_when(request.deadline)})" if request.deadline else ""
    return f"🔔 Reminder: “{clip(request.title, 200)}” is still waiting for an answer{due}."


def secret_dialog(request: Request) -> dict[str, Any]:
    """The dialog (task module) that asks a request's secrets: password inputs, nothing echoed."""
    body = [_text(clip(request.title, 500), weight="Bolder")]
    for question in request.questions:
        if question.kind is QuestionKind.secret:
            body.append({"type": "Input.Text", "id": INPUT_PREFIX + question.id, "label": clip(question.prompt, 500),
                         "style": "Password", "isRequired": question.required, "maxLength": 5000})
        else:
            body.extend(_inputs(request, question))
    card = _card(body, [{"type": "Action.Submit", "title": "Submit",
                         "data": {"verb": SECRET_DIALOG, "request_id": request.id}}])
    return {"task": {"type": "continue", "value": {"title": "Provide secret", "width": "medium",
                                                    "card": attachment(card)}}}


def dialog_message(text: str) -> dict[str, Any]:
    """A dialog's closing message (task/submit's response)."""
    return {"task": {"type": "message", "value": clip(text, 500)}}


def invoke_card(card: dict[str, Any]) -> dict[str, Any]:
    """An `adaptiveCard/action` response that replaces the card for the person who clicked."""
    return {"statusCode": 200, "type": CARD_TYPE, "value": card}


def invoke_message(text: str) -> dict[str, Any]:
    """An `adaptiveCard/action` response that shows a message instead of a new card."""
    return {"statusCode": 200, "type": "application/vnd.microsoft.activity.message", "value": clip(text, 500)}
