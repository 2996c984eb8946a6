"""Shape checks for what arrives at /slack/events, before Bolt's matchers index into it."""

from __future__ import annotations

from typing import Any


def payload_problem(body: Any) -> str | None:
    """Why a parsed (and signature-checked) body cannot be a Slack payload, or None."""
    if not isinstance(body, dict):
        return "body is not an object"
    kind = body.get("type")
    if kind in ("block_actions", "view_submission", "view_closed"):
        user = body.get("user")
        if not isinstance(user, dict) or not isinstance(user.get("id"), str):
            return "user missing"
    if kind == "block_actions":
        actions = body.get("actions")
        if not isinstance(actions, list) or not actions or not all(
                isinstance(a, dict) and isinstance(a.get("action_id"), str) for a in actions):
            return "actions must be a list of objects with action_id"
    if kind in ("view_submission", "view_closed"):
        view = body.get("view")
        if not isinstance(view, dict) or not isinstance(view.get("callback_id"), str):
            return "view with callback_id missing"
        state = view.get("state", {})
        if not isinstance(state, dict) or not isinstance(state.get("values", {}), dict):
            return "view.state.values must be an object"
        if not isinstance(view.get("blocks", []), list):
            return "view.blocks must be a list"
    if kind == "event_callback" and not isinstance(body.get("event"), dict):
        return "event must be an object"
    return None
