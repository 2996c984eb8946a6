"""An answer needs a request that exists and is still open."""

from __future__ import annotations

from bridge.answering.actor import given_on_timeout
from bridge.errors import AlreadyClosed, NotFound
from bridge.models import Request, RequestState
from bridge.store.base import Store


def closed_error(request: Request) -> AlreadyClosed:
    """The refusal for acting on `request`, which is no longer open: how it ended, by whom."""
    by = request.answer.responder.display if request.answer else None
    at = request.answer.answered_at if request.answer else None
    label = request.state.value
    if request.answer is not None and request.state in (RequestState.delivered, RequestState.failed):
        label = "expired" if given_on_timeout(request.answer) else "answered"  # delivery is not news to a person
    return AlreadyClosed(request.id, label, by, at)


async def open_request(store: Store, request_id: str) -> Request:
    """The request `request_id`; NotFound or AlreadyClosed when it cannot be answered."""
    request = await store.get_request(request_id)
    if request is None:
        raise NotFound(request_id)
    if not request.is_open:
        raise closed_error(request)
    return request
