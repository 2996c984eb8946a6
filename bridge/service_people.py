"""The bridge's calls for many decisions at once and for people away: batches of alike
requests (bridge.batches) and delegation windows (bridge.delegation), for every channel
alike. `BridgeService` has them; a channel reaches them through `BridgeAPI`."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bridge.batches import Batch, BatchResult, answer_batch, approvable, batches
from bridge.delegation import Delegation, DelegationRefused
from bridge.models import Responder
from bridge.people import People

if TYPE_CHECKING:
    from bridge.config_routes import Route
    from bridge.models import Request
    from bridge.reach import Reach

log = logging.getLogger("hitl_bridge.requests")


class ManyAndAway:
    """Batches and delegation, over the service's answer path, store and people."""

    people: People
    reach: Reach

    if TYPE_CHECKING:  # BridgeService's own
        async def waiting_for(self, responder: Responder, *, channel: str, here: Sequence[str] = (),
                              named: bool = True) -> list[Request]: ...

        def route_of(self, request: Request) -> Route: ...

        async def answer(self, request_id: str, responder: Responder, values: dict[str, Any], *, via: str,
                         reason: str | None = None, grant: Any = None, batch: str | None = None) -> Request: ...

        async def get(self, request_id: str) -> Request | None: ...

    async def batches_waiting(self, responder: Responder, *, channel: str,
                              here: Sequence[str] = ()) -> list[Batch]:
        """The alike yes/no requests waiting for `responder` on `channel`, grouped, largest first."""
        found = batches(await self.waiting_for(responder, channel=channel, here=here), self.route_of)
        return [b for b in found if approvable(b)]

    async def answer_batch(self, ids: Sequence[str], responder: Responder, *, via: str,
                           values: dict[str, Any] | None = None, value: Any = None,
                           reason: str | None = None) -> BatchResult:
        """Answer each of `ids` through the ordinary answer path: a result per item."""
        return await answer_batch(self, ids, responder, via=via, values=values, value=value, reason=reason)

    def person_acting(self, responder: Responder) -> str:
        """The person of people: a verified handle belongs to; DelegationRefused otherwise
        (only a person can be away or stand in)."""
        person = self.people.person_named(responder.user_id) if responder.platform == "person" \
            else self.people.person_of(responder.key)
        if person is None:
            raise DelegationRefused(f"{responder.key} is not a handle of anyone in people:, so it cannot be "
                                    "away or hand its requests on")
        return person

    async def away(self, person: str, delegate: str, until: datetime, *,
                   starts: datetime | None = None, by: str = "") -> Delegation:
        """`person` (a name, or a handle of theirs) is away from `starts` (now) until `until`,
        `delegate` standing in; recorded in the store (every replica, any restart).
        DelegationRefused says what is wrong."""
        window = await self.reach.delegations.set(self.people, person, delegate, until, starts=starts,
                                                  by=by or person)
        log.info("delegation: %s away %s..%s, %s stands in (set by %s)", window.person,
                                window.starts.isoformat(), window.until.isoformat(), window.delegate,
                                window.set_by)
        return window

    async def back(self, person: str) -> bool:
        """End `person`'s window now; True when there was one."""
        return await self.reach.delegations.end(self.people, person)

    async def delegations(self) -> list[Delegation]:
        """The windows not yet ended."""
        await self.reach.delegations.load()
        return self.reach.delegations.listing()
