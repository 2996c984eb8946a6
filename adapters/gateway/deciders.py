"""How a held call (or an elicitation) is put to the bridge and its close awaited: the one
step the gateway does not do itself. Everything else runs the same code in both places.

- `CoreDecider` (the daemon's `/mcp/<name>`): `RequestSink.submit` and `RequestSink.wait`,
  the core's own ports, `created_by` the token the agent's session opened with. A request
  the rules decide comes back closed from `submit`, its decision on record (the core
  records a rule's answer before `submit` returns; when it cannot, the request stays open
  for a person). A store that cannot take the request at all is `NotAsked`: not called.
- `ApiDecider` (`hitl-bridge gateway`): the same through a running bridge's HTTP API
  (`hitl-bridge-client`), as `hitl-bridge mcp` does.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import anyio
from hitl_bridge_client import AsyncClient, BridgeError, Conflict
from pydantic import ValidationError

from bridge.errors import BridgeError as Refused
from bridge.http.views import request_view
from bridge.models import RequestIn
from bridge.ports import RequestSink

log = logging.getLogger("hitl_bridge.gateway")

WITHDRAW_WITHIN_S = 5.0


class NotAsked(Exception):
    """The bridge did not take the request (refused, unreachable): nothing was allowed."""


class Decider(Protocol):
    #: the daemon is stopping: a call cut short now leaves its request open for the next start
    draining: bool

    async def submit(self, body: dict[str, Any], created_by: str | None) -> dict[str, Any]:
        """Create the request; its API view (already closed when a rule decided it)."""
        ...

    async def wait(self, request_id: str, seconds: float) -> dict[str, Any]:
        """The view once closed, or after `seconds` (still open)."""
        ...

    async def withdraw(self, view: dict[str, Any], reason: str) -> None:
        """Cancel the request nobody waits for any more (if still open)."""
        ...


class CoreDecider:
    def __init__(self, sink: RequestSink, source: str) -> None:
        self.sink = sink
        self.source = source
        self.draining = False

    async def submit(self, body: dict[str, Any], created_by: str | None) -> dict[str, Any]:
        try:
            asked = RequestIn.model_validate(body)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise NotAsked(f"the call cannot be asked about ({where}: {err['msg']})") from None
        try:
            request, _ = await self.sink.submit(asked, source=self.source, created_by=created_by)
        except Refused as exc:
            raise NotAsked(f"the bridge refused the call: {exc}") from None
        except Exception as exc:  # the store failed: nothing is on record, so nothing is called
            log.exception("gateway %s: the request for a call could not be recorded", self.source)
            raise NotAsked(f"the bridge could not record the call ({type(exc).__name__}); see the bridge's "
                           "log") from None
        return request_view(request)

    async def wait(self, request_id: str, seconds: float) -> dict[str, Any]:
        request = await self.sink.wait(request_id, seconds)
        if request is None:
            raise NotAsked(f"request {request_id} is gone")
        return request_view(request)

    async def withdraw(self, view: dict[str, Any], reason: str) -> None:
        if self.draining or not view.get("external_id"):
            return
        with anyio.move_on_after(WITHDRAW_WITHIN_S, shield=True):
            await self.sink.withdraw(self.source, str(view["external_id"]), reason,
                                     created_by=view.get("created_by") or None)


class ApiDecider:
    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self.draining = False

    async def submit(self, body: dict[str, Any], created_by: str | None) -> dict[str, Any]:
        try:  # the bridge knows the caller by its token: created_by is the token's
            request_id = await self.client.create(body)
            return await self.client.get(request_id)
        except BridgeError as exc:
            raise NotAsked(f"the bridge did not take the request: {exc} ({self.client.base_url})") from None

    async def wait(self, request_id: str, seconds: float) -> dict[str, Any]:
        try:
            return await self.client.get(request_id, wait=seconds)
        except BridgeError as exc:
            raise NotAsked(f"lost request {request_id}: {exc}") from None

    async def withdraw(self, view: dict[str, Any], reason: str) -> None:
        if self.draining:
            return
        with anyio.move_on_after(WITHDRAW_WITHIN_S, shield=True):
            try:
                await self.client.cancel(str(view["id"]), reason, actor="mcp-gateway")
            except Conflict:
                pass  # closed meanwhile
            except BridgeError as exc:
                log.warning("could not cancel request %s after its call ended: %s", view.get("id"), exc)

    async def aclose(self) -> None:
        await self.client.aclose()
