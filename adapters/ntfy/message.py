"""Build ntfy messages (pure functions, no I/O): the JSON published for a request, with
`http` action buttons that POST a decision to a one-use link, and the one that replaces it
once the request is closed (the same `sequence_id`: ntfy 2.16 and later update the
notification in place; older servers show it as a follow-up message).

A target may carry its own priority and tags: `ntfy:ops?priority=5&tags=warning,rocket`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from adapters.notice import closed_notice, request_notice
from adapters.ntfy.spec import TOPIC, topic_of
from bridge.action_tokens import one_tap
from bridge.models import Request
from bridge.outcome import OutcomeKind, outcome_of

MAX_ACTIONS = 3  # ntfy shows at most three buttons
CLOSED_TAGS = {OutcomeKind.approved: "white_check_mark", OutcomeKind.rejected: "x"}


class BadTarget(ValueError):
    """A target that is not `ntfy:<topic>[?priority=1-5&tags=a,b]`."""


@dataclass(frozen=True)
class Target:
    topic: str
    priority: int | None = None
    tags: tuple[str, ...] | None = None


def parse_target(target: str) -> Target:
    ident = target.removeprefix("ntfy:")
    topic, _, query = ident.partition("?")
    if not TOPIC.fullmatch(topic):
        raise BadTarget(f"{target[:80]!r}: the topic may hold letters, digits, - and _ (1-64)")
    options = parse_qs(query, keep_blank_values=True, strict_parsing=False) if query else {}
    if set(options) - {"priority", "tags"} or any(len(v) != 1 for v in options.values()):
        raise BadTarget(f"{target[:80]!r}: only ?priority=1-5 and &tags=a,b may follow the topic")
    priority = None
    if "priority" in options:
        if options["priority"][0] not in ("1", "2", "3", "4", "5"):
            raise BadTarget(f"{target[:80]!r}: priority is 1 (min) to 5 (max)")
        priority = int(options["priority"][0])
    tags = None
    if "tags" in options:
        tags = tuple(t for t in options["tags"][0].split(",") if t)
        if len(tags) > 10 or any(not re.fullmatch(r"[-_A-Za-z0-9+]{1,40}", t) for t in tags):
            raise BadTarget(f"{target[:80]!r}: tags are short words separated by commas")
    return Target(topic, priority, tags)


def handle_of(target: str) -> str:
    return f"ntfy:{topic_of(target.removeprefix('ntfy:'))}"


def sequence_id(request: Request) -> str:
    return ("hitl-" + re.sub(r"[^-_A-Za-z0-9]", "-", request.id))[:64]


def request_message(request: Request, target: Target, *, tap_url: str | None, open_url: str,
                    priority: int, tags: list[str], reminder: bool = False) -> dict[str, Any]:
    """The message for an open request. `tap_url`: where Approve and Reject POST (None when
    one tap cannot answer it: then only Open)."""
    notice = request_notice(request, reminder=reminder)
    actions: list[dict[str, Any]] = []
    if tap_url is not None and one_tap(request):
        for label, decision in (("Approve", "approve"), ("Reject", "reject")):
            actions.append({"action": "http", "label": label, "url": tap_url, "method": "POST",
                            "headers": {"Content-Type": "application/json"},
                            "body": json.dumps({"decision": decision}), "clear": True})
    actions.append({"action": "view", "label": "Open", "url": open_url, "clear": False})
    bump = max(target.priority or priority, 4) if request.escalation_level else (target.priority or priority)
    return {"topic": target.topic, "sequence_id": sequence_id(request), "title": notice.title,
            "message": notice.body, "priority": bump, "tags": list(target.tags or tags),
            "click": open_url, "actions": actions[:MAX_ACTIONS]}


def closed_message(request: Request, target: Target, *, open_url: str) -> dict[str, Any]:
    """What replaces the question once the request is closed: quiet (priority 2), no buttons."""
    notice = closed_notice(request)
    ended = outcome_of(request)
    tag = CLOSED_TAGS.get(ended.kind, "heavy_minus_sign") if ended is not None else "heavy_minus_sign"
    return {"topic": target.topic, "sequence_id": sequence_id(request), "title": notice.title,
            "message": notice.body, "priority": 2, "tags": [tag], "click": open_url, "actions": []}
