"""What the API shows of a request: never a secret, never the callback secret."""

from __future__ import annotations

import json
from typing import Any

from bridge.models import Event, Post, Request
from bridge.policy import GrantOffer
from bridge.store.base import OutboxItem, Vote
from bridge.timing_view import vote_line

HIDDEN: set[str] = {"answer", "callback", "fingerprint", "source_ref", "timer_steps", "rules"}


def request_view(request: Request) -> dict[str, Any]:
    data = request.model_dump(mode="json", exclude=HIDDEN)
    if request.callback is not None:
        data["callback"] = {"url": request.callback.url}
    if request.answer is not None:
        answer = request.answer
        data["answer"] = {
            "values": request.redacted_answer(),
            "responder": answer.responder.model_dump(),
            "via": answer.via,
            "answered_at": answer.answered_at.isoformat(),
            "reason": answer.reason,
            "grant": answer.grant.model_dump(mode="json") if answer.grant else None,
        }
    else:
        data["answer"] = None
    return data


def request_view_json(request: Request) -> bytes:
    """`request_view` as compact JSON, serialised by pydantic in one pass (intake's answer:
    a third of the cost of building the dict and encoding it)."""
    if request.answer is not None:  # a repeated external_id of an answered request: rare
        return json.dumps(request_view(request), ensure_ascii=False, separators=(",", ":")).encode()
    head = request.model_dump_json(exclude=HIDDEN)
    callback = "" if request.callback is None else f',"callback":{{"url":{json.dumps(request.callback.url)}}}'
    return f'{head[:-1]}{callback},"answer":null}}'.encode()


def offer_view(offer: GrantOffer) -> dict[str, Any]:
    """A standing approval offered next to Approve: what to send back as the answer's `grant`."""
    return {"key": offer.key, "label": offer.label, "pattern": offer.pattern,
            **offer.choice.model_dump(mode="json", exclude={"pattern"})}


def event_view(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json")


def post_view(post: Post) -> dict[str, Any]:
    """A copy; `conversation` tells apart the copies of one target (a Slack user group's DMs)."""
    data = post.model_dump(mode="json", exclude={"ref"})
    data["conversation"] = post.ref.get("channel")
    return data


def outbox_view(item: OutboxItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "outcome": item.state,
        "attempts": item.attempts,
        "due_at": item.due_at.isoformat(),
        "last_error": item.last_error,
        "dead": item.dead,
    }


async def votes_view(service: Any, request: Request) -> dict[str, Any]:
    """`quorum` (the route's), and on a quorum route `votes` and `tally` (the line every
    copy shows: "1 of 2 approvals: ana")."""
    quorum = service.route_of(request).quorum
    if quorum <= 1:
        return {"quorum": quorum, "votes": [], "tally": None}
    votes = await service.store.list_votes(request.id)
    return {"quorum": quorum, "votes": [vote_view(v) for v in votes], "tally": vote_line(request, votes, quorum)}


def vote_view(vote: Vote) -> dict[str, Any]:
    """One vote on a quorum route: who (the handle it counts as, and the name shown), what
    (secrets already redacted when recorded) and when."""
    try:
        values = json.loads(vote.value)
    except ValueError:
        values = vote.value
    return {"voter": vote.voter, "name": vote.name, "values": values, "at": vote.at.isoformat()}
