"""What the deployment sources (GitHub, GitLab) share besides the pure mapping of
`adapters.deploys`: the sink they were given, the open requests they match withdrawals
against, refused webhooks counted where the operator looks (`GET /v1/sources`, `/metrics`,
`/readyz`), and the poll loop."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from starlette.responses import JSONResponse

from bridge.models import OPEN_STATES, Request
from bridge.ports import DeliveryError, RequestSink
from bridge.store.base import Store
from bridge.store.query import RequestQuery

log = logging.getLogger("hitl_bridge.deploys")


class DeploySource:
    """The skeleton of a deploy source; subclasses set `platform` and `signature` (what a
    webhook must carry), and define `poll_once` when they poll."""

    platform = "the platform"
    signature = "the signature"

    def __init__(self, name: str, store: Store | None) -> None:
        self.name = name
        self.store = store
        self.sink: RequestSink | None = None  # given with the routes, so webhooks work before run()
        self.refused = 0  # webhooks refused for their signature or token
        self.errors: dict[str, str] = {}  # where → why the last read failed (cleared on success)

    @property
    def problems(self) -> dict[str, str]:
        """What this source cannot see right now, and the webhooks it refused."""
        found = dict(self.errors)
        if self.refused:
            found["webhook"] = f"{self.refused} webhook(s) refused: wrong or missing {self.signature}"
        return found

    def refuse(self, why: str) -> JSONResponse:
        """Count a webhook refused for its credentials, report it, and answer 401."""
        self.refused += 1
        if self.sink is not None:
            self.sink.health.degraded(f"source:{self.name}", f"{self.refused} webhook(s) refused: {why}",
                                      f"check the webhook secret in {self.platform} and of source {self.name!r}")
        log.warning("source %s: webhook refused: %s", self.name, why)
        return JSONResponse({"detail": f"refused: {why}"}, status_code=401)

    async def poll_forever(self, sink: RequestSink, every: timedelta) -> None:
        self.sink = sink
        while True:
            await self.poll_once(sink)
            await asyncio.sleep(every.total_seconds())

    async def poll_once(self, sink: RequestSink) -> None:
        raise NotImplementedError

    def _sink(self) -> RequestSink:
        if self.sink is None:
            raise DeliveryError(f"the {self.platform} source has no sink yet")
        return self.sink

    async def _open(self) -> list[Request]:
        """This source's open requests (to match a platform's "nobody waits any more")."""
        if self.store is None:
            return []
        found: list[Request] = []
        async for batch in self.store.pages(RequestQuery(states=tuple(OPEN_STATES), source=self.name)):
            found.extend(batch)
        return found
