"""What every copy of a request should say about its timing side: votes so far and
escalations ("1 of 2 approvals: Ana", "Escalated to slack:@U0BOSS at 14:15 UTC").

Channels call `timing_notes(bridge, request)` from `update()` and show the lines under the
request; the CLI's `show` prints the same lines. Reads the store only.
"""

from __future__ import annotations

import json
from typing import Any

from bridge.models import Request
from bridge.questions import QuestionKind
from bridge.store.base import Vote


def vote_line(request: Request, votes: list[Vote], quorum: int) -> str | None:
    """`2 of 3 approvals: Ana, Bob` for confirm questions; for other kinds the largest group
    of identical answers: `1 of 2 matching answers: Ana (prod), Bob (staging)`."""
    if quorum <= 1 or not votes:
        return None
    confirm = all(q.kind is QuestionKind.confirm for q in request.questions)
    if confirm:
        approvals = [v for v in votes if all(x == "yes" for x in _values(v).values())]
        names = ", ".join(v.name for v in approvals) or "none yet"
        return f"{len(approvals)} of {quorum} approvals: {names}"
    groups: dict[str, list[Vote]] = {}
    for vote in votes:
        groups.setdefault(vote.value, []).append(vote)
    best = max(len(g) for g in groups.values())
    shown = ", ".join(f"{v.name} ({_short(v)})" for v in votes)
    return f"{best} of {quorum} matching answers: {shown}"


def _values(vote: Vote) -> dict[str, Any]:
    try:
        loaded = json.loads(vote.value)
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _short(vote: Vote) -> str:
    values = _values(vote)
    text = ", ".join(str(v) for v in values.values()) if values else vote.value
    return text if len(text) <= 40 else text[:39] + "…"


async def timing_notes(bridge: Any, request: Request) -> list[str]:
    """Lines for every copy of `request`: votes (quorum routes) and escalation levels.

    `bridge` is the BridgeAPI a channel holds (the BridgeService): its `store` is read and,
    when present, `route_of(request).quorum`."""
    route_of = getattr(bridge, "route_of", None)
    quorum = route_of(request).quorum if route_of is not None else 1
    lines: list[str] = []
    if quorum > 1:
        line = vote_line(request, await bridge.store.list_votes(request.id), quorum)
        if line:
            lines.append(line)
    if request.escalation_level:
        for event in await bridge.store.list_events(request.id):
            if event.kind != "escalated":
                continue
            verb = "Handed over to" if event.data.get("replace") else "Escalated to"
            targets = ", ".join(event.data.get("notify", []))
            lines.append(f"{verb} {targets} at {event.at.strftime('%H:%M UTC')}")
    return lines
