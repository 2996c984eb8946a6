"""Block Kit for a batch (batch.py): one message listing alike requests with "Approve all N",
a "Leave out…" picker and "Review one by one"; after, the same message with a result per
item. Pure functions, no I/O."""

from __future__ import annotations

from typing import Any

from adapters.slack.text import escape, mrkdwn, plain, truncate
from bridge.batches import Batch

APPROVE_ACTION = "batch:approve"
REVIEW_ACTION = "batch:review"
EXCLUDE_ACTION = "batch:exclude"
EXCLUDE_BLOCK = "batch:exclude"
#: items listed in one message (Slack allows 50 blocks and 100 options in a select)
LISTED = 40
MARKS = {"answered": ":white_check_mark:", "voted": ":ballot_box_with_check:", "refused": ":no_entry:",
         "skipped": ":heavy_minus_sign:"}


def item_lines(titles: list[str]) -> str:
    return "\n".join(f"{n}. {escape(truncate(t, 120))}" for n, t in enumerate(titles, start=1))


def batch_message(batch: Batch, token: str) -> tuple[str, list[dict[str, Any]]]:
    """The fallback text and blocks offering `batch` (its first LISTED items)."""
    items = batch.requests[:LISTED]
    count = len(items)
    text = f"{count} alike requests wait for you: {batch.label}"
    options = [{"text": plain(f"{n}. {r.title}", 75), "value": str(n)} for n, r in enumerate(items, start=1)]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": plain(text, 150)},
        {"type": "section", "text": mrkdwn(item_lines([r.title for r in items]))},
        {"type": "input", "block_id": EXCLUDE_BLOCK, "optional": True, "label": plain("Leave out", 50),
         "element": {"type": "multi_static_select", "action_id": EXCLUDE_ACTION, "options": options,
                     "placeholder": plain("All but…", 50)}},
        {"type": "actions", "block_id": f"batch:{token}", "elements": [
            {"type": "button", "action_id": APPROVE_ACTION, "style": "primary", "value": token,
             "text": plain(f"Approve all {count}", 75)},
            {"type": "button", "action_id": REVIEW_ACTION, "value": token, "text": plain("Review one by one", 75)},
        ]},
        {"type": "context", "elements": [mrkdwn("Each is approved on its own: the rules of each request still "
                                                "apply, and you see the result of each here.")]},
    ]
    return text, blocks


def results_message(titles: dict[str, str], ids: list[str], results: dict[str, dict[str, Any]]
                    ) -> tuple[str, list[dict[str, Any]]]:
    """The batch message after the decision: each item's outcome (skipped ones said so)."""
    lines = []
    counts: dict[str, int] = {}
    for n, request_id in enumerate(ids, start=1):
        result = results.get(request_id, {"outcome": "skipped"})
        outcome = str(result["outcome"])
        counts[outcome] = counts.get(outcome, 0) + 1
        why = f" — {escape(truncate(str(result['reason']), 200))}" if result.get("reason") else ""
        lines.append(f"{MARKS.get(outcome, '')} {n}. {escape(truncate(titles.get(request_id, request_id), 100))}"
                     f" · {outcome}{why}")
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    return f"Batch decided: {summary}", [
        {"type": "header", "text": plain(f"Batch decided: {summary}", 150)},
        {"type": "section", "text": mrkdwn("\n".join(lines))},
    ]
