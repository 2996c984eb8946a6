"""How the MCP server reaches the bridge: always through its public HTTP API, with the
`hitl-bridge-client` package, so `hitl-bridge mcp` (stdio, a remote daemon) and `/mcp`
(mounted in the daemon) run the same code.

- `RemoteLink`: one client for the daemon at `--url` / `HITL_BRIDGE_URL` with `--token` /
  `HITL_BRIDGE_TOKEN`; the calls waiting for answers share one watch stream
  (`adapters.mcp.watching`), which rides out a daemon restart.
- `MountedLink`: a client per call that sends the `/mcp` caller's own bearer token to the
  daemon's own app in-process (`httpx.ASGITransport`: no socket, same checks), so a request
  is `created_by` that token and `forbid_self_approval` applies to it. A call holding for
  an answer waits on the core itself (`RequestSink.wait`, the change feed behind long
  polls), then reads the answer through the API like the remote link does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import httpx
from hitl_bridge_client import AsyncClient

from adapters.mcp.watching import SharedWatch
from bridge.http.hosts import hostname_of_header
from bridge.ports import RequestSink


class BridgeLink(Protocol):
    #: the daemon is stopping: a call cut short now leaves its request open (it is in the
    #: store, and the next start keeps it), rather than cancelling it
    draining: bool

    def client(self, headers: Mapping[str, str] | None) -> AsyncClient:
        """The client to ask with on behalf of the MCP request that carried `headers`."""
        ...

    def describe(self) -> str:
        """Where the bridge is, for messages."""
        ...

    async def wait(self, client: AsyncClient, request_id: str, seconds: float) -> dict[str, Any]:
        """The request (its API view) once it is closed, or after `seconds` (then still open)."""
        ...


class RemoteLink:
    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self.draining = False
        self.watch = SharedWatch(client)

    def client(self, headers: Mapping[str, str] | None) -> AsyncClient:
        return self._client

    def describe(self) -> str:
        return self._client.base_url

    async def wait(self, client: AsyncClient, request_id: str, seconds: float) -> dict[str, Any]:
        """On the shared watch stream; the request as it is when `seconds` pass first."""
        view = await self.watch.wait(request_id, seconds)
        return view if view is not None else await client.get(request_id)

    async def aclose(self) -> None:
        await self.watch.aclose()
        await self._client.aclose()


class MountedLink:
    """Given the core when the daemon builds its routes (`sink`); bound to the daemon's app
    by the first `/mcp` request (`bind`)."""

    def __init__(self) -> None:
        self.draining = False
        self.sink: RequestSink | None = None
        self._http: httpx.AsyncClient | None = None
        self._app: Any = None

    def bind(self, app: Any) -> None:
        if self._app is not app:
            self._app = app
            self._http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), timeout=None)

    def client(self, headers: Mapping[str, str] | None) -> AsyncClient:
        if self._http is None:
            raise RuntimeError("the /mcp endpoint has not been reached yet")
        headers = {k.lower(): v for k, v in (headers or {}).items()}
        # the caller's Host already passed the daemon's Host check: the inner call says the same
        host = headers.get("host") or ""
        base = f"http://{host}" if hostname_of_header(host) is not None else "http://localhost"
        authorization = headers.get("authorization") or ""
        token = authorization[7:].strip() if authorization.lower().startswith("bearer ") else ""
        return AsyncClient(base, token=token, http=self._http)  # "" (not None): never $HITL_BRIDGE_TOKEN

    def describe(self) -> str:
        return "this bridge"

    async def wait(self, client: AsyncClient, request_id: str, seconds: float) -> dict[str, Any]:
        """Wait on the core, then read the view (the same body a long poll answers); the
        caller may wait on `request_id` (its own request, or checked by a first read)."""
        if self.sink is None:
            raise RuntimeError("the /mcp endpoint has no sink (its routes were not built)")
        await self.sink.wait(request_id, seconds)
        return await client.get(request_id)  # NotFound when it is gone, as the long poll says

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
