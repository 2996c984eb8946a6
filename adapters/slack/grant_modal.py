"""The "Always allow this" modal: the pattern the grant will match, pre-filled with the
offer's default, which the person may narrow before saving (bridge.policy.pressed checks
it). Pure: a view to open and the reading of its submission."""

from __future__ import annotations

from typing import Any

from adapters.slack.modals import VALUE, ModalOrigin
from adapters.slack.text import escape, mrkdwn, plain, truncate
from bridge.models import Request
from bridge.policy import GrantOffer
from bridge.policy.pressed import MAX_PATTERN_CHARS

GRANT_CALLBACK = "hitl:grant"
PATTERN_BLOCK = "pattern"


def grant_modal(request: Request, offer: GrantOffer, origin: ModalOrigin) -> dict[str, Any]:
    """Asks which calls "Always allow this" covers, starting from the offer's pattern."""
    tool = escape(truncate(request.tool or "", 200))
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": VALUE, "max_length": MAX_PATTERN_CHARS}
    if offer.pattern:
        element["initial_value"] = offer.pattern[:MAX_PATTERN_CHARS]
    return {
        "type": "modal",
        "callback_id": GRANT_CALLBACK,
        "private_metadata": origin.dump(),
        "title": plain("Always allow this", 24),
        "submit": plain("Allow and save", 24),
        "close": plain("Cancel", 24),
        "blocks": [
            {"type": "section", "text": mrkdwn(
                f"Approve *{escape(truncate(request.title, 500))}* and allow later calls of `{tool}` "
                "that match this pattern without asking, until the grant is revoked.")},
            {"type": "input", "block_id": PATTERN_BLOCK, "label": plain("Pattern", 2000), "element": element,
             "hint": plain("Narrow it to what you mean, e.g. Bash(git status:*) or Edit(./src/**).", 2000)},
        ],
    }


def read_pattern(state_values: Any) -> str | None:
    """The pattern typed into the modal (None when absent or not a string)."""
    if not isinstance(state_values, dict):
        return None
    block = state_values.get(PATTERN_BLOCK)
    element = block.get(VALUE) if isinstance(block, dict) else None
    value = element.get("value") if isinstance(element, dict) else None
    return value if isinstance(value, str) else None
