"""Block Kit checks of the fake Slack: what the real API refuses (limits from PLATFORMS.md)."""

from __future__ import annotations

from typing import Any

MAX_MESSAGE_BLOCKS = 50
MAX_MODAL_BLOCKS = 100


def check_message(args: dict[str, Any]) -> str | None:
    text = args.get("text", "")
    blocks = args.get("blocks")
    if not text and not blocks:
        return "no_text"
    if isinstance(text, str) and len(text) > 40_000:
        return "msg_too_long"
    if blocks is None:
        return None
    return check_blocks(blocks, MAX_MESSAGE_BLOCKS)


def check_view(view: Any) -> str | None:
    if not isinstance(view, dict) or view.get("type") != "modal":
        return "view must be an object with type modal"
    title = view.get("title", {})
    if not isinstance(title, dict) or not 1 <= len(title.get("text", "")) <= 24:
        return "title must be 1-24 characters"
    for key, limit in (("private_metadata", 3000), ("callback_id", 255)):
        if len(str(view.get(key, ""))) > limit:
            return f"{key} longer than {limit}"
    if any(b.get("type") == "input" for b in view.get("blocks", []) if isinstance(b, dict)):
        if not isinstance(view.get("submit"), dict):
            return "a modal with inputs needs submit"
    return check_blocks(view.get("blocks", []), MAX_MODAL_BLOCKS)


def check_home_view(view: Any) -> str | None:
    """views.publish: a `home` view of at most 100 blocks (no title, no submit)."""
    if not isinstance(view, dict) or view.get("type") != "home":
        return "view must be an object with type home"
    return check_blocks(view.get("blocks", []), MAX_MODAL_BLOCKS)


def check_blocks(blocks: Any, max_blocks: int) -> str | None:
    if not isinstance(blocks, list):
        return "blocks must be a list"
    if len(blocks) > max_blocks:
        return f"more than {max_blocks} blocks"
    block_ids: set[str] = set()
    for i, block in enumerate(blocks):
        if not isinstance(block, dict) or "type" not in block:
            return f"block {i} has no type"
        block_id = block.get("block_id")
        if block_id is not None:
            if len(block_id) > 255 or block_id in block_ids:
                return f"block {i}: block_id too long or duplicated"
            block_ids.add(block_id)
        problem = _check_block(block)
        if problem:
            return f"block {i}: {problem}"
    return None


def _check_text(obj: Any, limit: int) -> str | None:
    if not isinstance(obj, dict) or obj.get("type") not in ("plain_text", "mrkdwn"):
        return "text object needed"
    if not 1 <= len(obj.get("text", "")) <= limit:
        return f"text must be 1-{limit} characters"
    return None


def _check_block(block: dict[str, Any]) -> str | None:
    kind = block["type"]
    if kind == "header":
        return _check_text(block.get("text"), 150)
    if kind == "section":
        if "text" in block and (problem := _check_text(block["text"], 3000)):
            return problem
        fields = block.get("fields", [])
        if len(fields) > 10 or any(_check_text(f, 2000) for f in fields):
            return "section fields: at most 10, each ≤ 2000 characters"
        if "text" not in block and not fields:
            return "section needs text or fields"
        if "accessory" in block:
            return _check_element(block["accessory"])
        return None
    if kind == "context":
        elements = block.get("elements", [])
        if not 1 <= len(elements) <= 10:
            return "context needs 1-10 elements"
        return next((p for e in elements if (p := _check_text(e, 3000))), None)
    if kind == "actions":
        elements = block.get("elements", [])
        if not 1 <= len(elements) <= 25:
            return "actions needs 1-25 elements"
        action_ids = [e.get("action_id") for e in elements]
        if len(set(action_ids)) != len(action_ids):
            return "duplicate action_id"
        return next((p for e in elements if (p := _check_element(e))), None)
    if kind == "input":
        if problem := _check_text(block.get("label"), 2000):
            return "label: " + problem
        return _check_element(block.get("element", {}))
    if kind in ("divider",):
        return None
    return f"unsupported block type {kind}"


def _check_element(element: dict[str, Any]) -> str | None:
    if len(str(element.get("action_id", ""))) > 255:
        return "action_id longer than 255"
    kind = element.get("type")
    if kind == "button":
        if problem := _check_text(element.get("text"), 75):
            return "button " + problem
        if len(str(element.get("value", ""))) > 2000:
            return "button value longer than 2000"
        if element.get("style") not in (None, "primary", "danger"):
            return "bad button style"
        return None
    if kind in ("static_select", "multi_static_select", "checkboxes", "radio_buttons"):
        options = element.get("options", [])
        limit = 10 if kind in ("checkboxes", "radio_buttons") else 100
        if not 1 <= len(options) <= limit:
            return f"{kind} needs 1-{limit} options"
        for option in options:
            if _check_text(option.get("text"), 75) or len(str(option.get("value", ""))) > 150:
                return "option text ≤ 75 and value ≤ 150 characters"
        return None
    if kind == "plain_text_input":
        initial = element.get("initial_value")
        if initial is not None and len(initial) > 3000:
            return "initial_value longer than 3000"
        if int(element.get("max_length", 3000)) > 3000:
            return "max_length above 3000"
        return None
    return f"unsupported element {kind}"
