"""An answer needs a request that exists and is still open (`closed_error`, worded by
bridge.outcome, when it is not)."""

from __future__ import annotations

from bridge.errors import NotFound
from bridge.models import Request
from bridge.outcome import closed_error  # the one wording of "already closed"
from bridge.store.base import Store


async def open_request(store: Store, request_id: str) -> Request:
    """The request `request_id`; NotFound or AlreadyClosed when it cannot be answered."""
    request = await store.get_request(request_id)
    if request is None:
        raise NotFound(request_id)
    if not request.is_open:
        raise closed_error(request)
    return request
