""""Waiting for me" on a channel: the open requests a person there may answer, read in two
store calls (the open requests with a copy on the channel, and those with a copy in this
chat), never one call per request.

A request waits for someone when a copy of it was posted where they are (their DM, this
chat), or when its `responders` let them answer (their handle, their person, a group of
theirs, or a group only the channel resolves, `Channel.is_member`) and a copy went out on
the channel at all: nobody learns here of a request that was never posted to them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from bridge.models import OPEN_STATES, Request, Responder
from bridge.store.base import Store
from bridge.store.query import RequestQuery

#: open requests looked at, newest first
SCANNED = 1000
FAR = float("inf")

IsAllowed = Callable[..., Awaitable[bool]]


def urgency(request: Request) -> tuple[float, float]:
    """The nearest deadline first, then the oldest."""
    return (request.deadline.timestamp() if request.deadline else FAR, request.created_at.timestamp())


async def waiting_for(store: Store, is_allowed: IsAllowed, responder: Responder, *, channel: str,
                      here: Sequence[str] = (), named: bool = True) -> list[Request]:
    """The open requests with a copy on `channel` posted to one of `here`, or (when `named`)
    whose `responders` let `responder` answer (`is_allowed`, through their platform): the
    most urgent first."""
    posted = RequestQuery(states=tuple(sorted(OPEN_STATES)), posted_on=channel)
    shown: set[str] = set()
    if here:
        shown = {r.id for r in await store.find_requests(replace(posted, posted_to=tuple(here)), limit=SCANNED)}
    found = [request for request in await store.find_requests(posted, limit=SCANNED)
             if request.id in shown or (named and request.responders
                                        and await is_allowed(request, responder, via=responder.platform))]
    return sorted(found, key=urgency)
