"""The check step before an answer is recorded, for pages without JavaScript: a one-tap
answer (Approve, Reject, an option) or edited arguments are shown back as they will be
sent, with a button that sends them. Nothing is recorded until then.

With JavaScript the same buttons hold the answer for a few seconds instead (undo), so a
person answers with one tap and can still take it back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.web.answers import ParsedAnswer
from adapters.web.present import answer_items
from bridge.models import Request
from bridge.questions import QuestionKind

#: how long (seconds) a one-tap answer waits in the browser before it is sent
UNDO_SECONDS = 5


@dataclass(frozen=True)
class Verdict:
    """What the send button of the check step says and looks like."""

    tone: str
    icon: str
    verb: str  # "approve", "reject", "choose “eu”"
    send: str  # the button's label
    button: str  # its CSS class


def verdict(request: Request, values: Mapping[str, Any]) -> Verdict | None:
    """The one decision a single confirm or choice question makes; None otherwise."""
    if len(request.questions) != 1:
        return None
    question = request.questions[0]
    value = values.get(question.id)
    if question.kind is QuestionKind.confirm:
        if value == "no":
            return Verdict("rejected", "x", "reject", "Reject", "reject")
        return Verdict("approved", "check", "approve", "Approve", "approve")
    if question.kind is QuestionKind.choice and isinstance(value, str):
        return Verdict("answered", "check", f"choose “{value}”", f"Send “{value}”", "primary")
    return None


def check_step(request: Request, form: Mapping[str, Sequence[str]], parsed: ParsedAnswer,
               grant_label: str = "") -> dict[str, Any]:
    """The check page's context: the answer as it reads, and the submitted fields to post
    again (only answer inputs, the reason and a standing approval; the caller refuses
    requests with a secret). `grant_label`: the standing-approval button pressed, if any."""
    assert not request.secret_question_ids, "a secret is never echoed back into a page"
    fields = [(name, value) for name, values in form.items()
              if name.startswith("q.") or name in ("reason", "list", "grant", "grant_pattern") for value in values]
    one = verdict(request, parsed.values)
    if grant_label and one is not None:
        one = Verdict("approved", "check", f"approve and {grant_label[:1].lower()}{grant_label[1:]}",
                      grant_label, "approve")
    items = [] if one is not None else answer_items(request, parsed.values)
    return {"fields": fields, "items": items, "verdict": one, "reason": parsed.reason or ""}
