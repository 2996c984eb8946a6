"""What the API shows of a request: never a secret, never the callback secret."""

from __future__ import annotations

from typing import Any

from bridge.models import Event, Post, Request
from bridge.store.base import OutboxItem


def request_view(request: Request) -> dict[str, Any]:
    data = request.model_dump(mode="json", exclude={"answer", "callback", "source_ref", "timer_steps"})
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
        }
    else:
        data["answer"] = None
    return data


def event_view(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json")


def post_view(post: Post) -> dict[str, Any]:
    return post.model_dump(mode="json", exclude={"ref"})


def outbox_view(item: OutboxItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "outcome": item.state,
        "attempts": item.attempts,
        "due_at": item.due_at.isoformat(),
        "last_error": item.last_error,
        "dead": item.dead,
    }
