"""The gateway's MCP server (the SDK's low-level `Server`): what the agent's client talks to.

Listings pass through from the agent session's downstream servers (`catalog`); a
`tools/call` is held: asked of the bridge (`held`), through the core's rules or people
(`deciders`), and forwarded only when allowed, with the arguments the person left; its
result comes back unchanged. A call the agent cancels, or whose connection drops, withdraws
its request: nobody should approve what nobody waits for.

Progress flows both ways: the downstream server's progress reaches the agent, and a held
call sends its own while it waits. An elicitation a server sends mid-call goes to the
agent's client when it declares that mode (and the server's `elicitation` is `client`),
else to people through the bridge.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
)
from pydantic import ValidationError

from adapters.gateway.deciders import Decider, NotAsked
from adapters.gateway.downstream import Downstream, DownstreamFailed
from adapters.gateway.elicitation import elicit_result, elicitation_body
from adapters.gateway.held import ArgumentsRefused, checked_arguments, held_call_body, tool_error, verdict_of
from adapters.gateway.session import AgentSession, Sessions
from adapters.gateway.settings import GatewaySettings, ServerSettings
from adapters.mcp.requests import Caller
from adapters.mcp.results import OPEN_STATES
from bridge.health import Health

log = logging.getLogger("hitl_bridge.gateway")

VERSION = "0.1.0"
POLL_S = 60.0
WITHDRAWN = "the agent stopped waiting (it cancelled the tool call or disconnected)"


class Gateway:
    """One configured gateway; `server` is what a transport serves (stdio or `/mcp/<name>`)."""

    def __init__(self, settings: GatewaySettings, decider: Decider, health: Health) -> None:
        self.settings = settings
        self.decider = decider
        self.health = health
        self.sessions = Sessions(settings, health, self.elicit)
        self.server = Server(
            f"hitl-bridge-gateway-{settings.name}", version=VERSION,
            instructions=f"Tools of {', '.join(s.name for s in settings.servers)}, behind hitl-bridge: a call "
                         "may wait until a person allows it.",
            on_list_tools=self.list_tools, on_call_tool=self.call_tool,
            on_list_resources=self.list_resources, on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource, on_list_prompts=self.list_prompts, on_get_prompt=self.get_prompt)

    # sessions ---------------------------------------------------------------------------
    def session(self, ctx: ServerRequestContext[Any, Any]) -> AgentSession:
        try:
            return self.sessions.of(ctx, self.created_by(ctx))
        except RuntimeError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=str(exc)) from None

    @staticmethod
    def created_by(ctx: ServerRequestContext[Any, Any]) -> str | None:
        """The verified caller (`api:<token name>`) /mcp/<name> put in the HTTP scope."""
        request = ctx.request
        scope = getattr(request, "scope", None)
        user = scope.get("user") if isinstance(scope, dict) else None
        client_id = getattr(getattr(user, "access_token", None), "client_id", None)
        return client_id if isinstance(client_id, str) else None

    # listings ---------------------------------------------------------------------------
    async def list_tools(self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
                         ) -> ListToolsResult:
        session = self.session(ctx)
        catalog = await _listing(session.tool_catalog(refresh=True))
        component = f"gateway:{self.settings.name}"
        if catalog.collisions:  # the registry logs it once, and /readyz and doctor show it
            self.health.degraded(component, "; ".join(str(c) for c in catalog.collisions),
                                 "set `prefix` on one of the servers that share a name")
        else:
            self.health.ok(component, "every tool listed")
        return ListToolsResult(tools=catalog.listed())

    async def list_prompts(self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
                           ) -> ListPromptsResult:
        catalog = await _listing(self.session(ctx).prompt_catalog())
        return ListPromptsResult(prompts=catalog.listed())

    async def get_prompt(self, ctx: ServerRequestContext[Any, Any], params: GetPromptRequestParams
                         ) -> GetPromptResult:
        session = self.session(ctx)
        catalog = session.prompts or await _listing(session.prompt_catalog())
        entry = catalog.find(params.name)
        if entry is None:
            raise MCPError(code=INVALID_PARAMS, message=f"unknown prompt {params.name[:200]!r}")
        downstream = session.downstreams[entry.server.name]
        result: GetPromptResult = await _listing(downstream.call(lambda c: c.get_prompt(entry.name, params.arguments)))
        return result

    async def list_resources(self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
                             ) -> ListResourcesResult:
        found = []
        for downstream in await self._with_resources(self.session(ctx)):
            listing = await _listing(downstream.call(lambda c: c.list_resources()))
            found.extend(listing.resources)
        return ListResourcesResult(resources=found)

    async def list_resource_templates(self, ctx: ServerRequestContext[Any, Any],
                                      params: PaginatedRequestParams | None) -> ListResourceTemplatesResult:
        found = []
        for downstream in await self._with_resources(self.session(ctx)):
            listing = await _listing(downstream.call(lambda c: c.list_resource_templates()))
            found.extend(listing.resource_templates)
        return ListResourceTemplatesResult(resource_templates=found)

    async def read_resource(self, ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams
                            ) -> ReadResourceResult:
        """Read from the first server that has the resource (servers in the config's order)."""
        uri = str(params.uri)
        failed: MCPError | None = None
        for downstream in await self._with_resources(self.session(ctx)):
            try:
                result: ReadResourceResult = await _listing(downstream.call(lambda c: c.read_resource(uri)))
                return result
            except MCPError as exc:
                failed = exc
        raise failed or MCPError(code=INVALID_PARAMS, message=f"no server has the resource {uri[:500]!r}")

    async def _with_resources(self, session: AgentSession) -> list[Downstream]:
        found = []
        for downstream in session.downstreams.values():
            client = await _listing(downstream.client())
            if client.server_capabilities.resources is not None:
                found.append(downstream)
        return found

    # held calls -------------------------------------------------------------------------
    async def call_tool(self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        session = self.session(ctx)
        try:
            catalog = session.tools or await session.tool_catalog()
        except DownstreamFailed as exc:
            return tool_error(str(exc))
        entry = catalog.find(params.name)
        if entry is None:
            return tool_error(f"unknown tool {params.name[:200]!r}: list the tools again")
        try:
            arguments = checked_arguments(params.arguments, self.settings.max_arguments_bytes)
        except ArgumentsRefused as exc:
            return tool_error(f"Not asked, not called: {exc}")
        caller = Caller(client=session.agent, labels=dict(self.settings.labels),
                        edit_arguments=self.settings.edit_arguments)
        body = held_call_body(caller, gateway=self.settings.name, server=entry.server.name, listed_name=params.name,
                              tool=entry.item, arguments=arguments, session=session.id)
        try:
            view = await self.decide(ctx, body)
        except NotAsked as exc:
            return tool_error(f"Not called: {exc}")
        verdict = verdict_of(view)
        if not verdict.allowed:
            return verdict.refusal()
        downstream = session.downstreams[entry.server.name]

        async def forward_progress(progress: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(progress, total, message)

        with session.calling(entry.server.name, ctx):
            try:
                result = await downstream.call_tool(entry.name, verdict.arguments, forward_progress)
            except DownstreamFailed as exc:
                return tool_error(str(exc))
            except MCPError as exc:
                return tool_error(f"server {entry.server.name!r} refused the call: {exc.error.message[:2000]}")
            except ValidationError:
                return tool_error(f"server {entry.server.name!r} answered with something that is not an MCP "
                                  "tool result; the call may have had effects")
        return result

    async def decide(self, ctx: ServerRequestContext[Any, Any], body: dict[str, Any]) -> dict[str, Any]:
        """Ask, and hold until the request closes (sending progress while people decide);
        the call ending first (cancelled, disconnected) withdraws the request."""
        view = await self.decider.submit(body, self.created_by(ctx))
        if view.get("state") not in OPEN_STATES:
            return view  # decided by a rule (or a standing grant) at once
        try:
            async with anyio.create_task_group() as heartbeat:
                heartbeat.start_soon(self._progress, ctx, str(view["id"]))
                while view.get("state") in OPEN_STATES:
                    view = await self.decider.wait(str(view["id"]), POLL_S)
                heartbeat.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            await self.decider.withdraw(view, WITHDRAWN)
            raise
        return view

    async def _progress(self, ctx: ServerRequestContext[Any, Any], request_id: str) -> None:
        every = self.settings.progress_every.total_seconds()
        start = anyio.current_time()
        while True:
            await anyio.sleep(every)
            waited = anyio.current_time() - start
            try:
                await ctx.session.report_progress(round(waited, 3), None,
                                                  f"waiting for a person to allow the call (request {request_id})")
            except Exception as exc:  # the client may be gone: the wait finds out
                log.debug("progress for %s not sent: %s", request_id, exc)

    # elicitation ------------------------------------------------------------------------
    async def elicit(self, session: AgentSession, server: ServerSettings,
                     params: ElicitRequestParams) -> ElicitResult | ErrorData:
        caller = session.caller_of(server.name)
        if caller is not None and server.elicitation == "client" and _client_can(caller, params):
            related = caller.request_id
            if isinstance(params, ElicitRequestURLParams):
                return await caller.session.elicit_url(params.message, params.url, params.elicitation_id or "", related)
            assert isinstance(params, ElicitRequestFormParams)
            return await caller.session.elicit_form(params.message, params.requested_schema, related)
        body, plan = elicitation_body(params, gateway=self.settings.name, server=server.name, agent=session.agent,
                                      session=session.id, labels=self.settings.labels)
        try:
            if caller is not None:
                view = await self.decide(caller, body)
            else:
                view = await self.decider.submit(body, None)
                while view.get("state") in OPEN_STATES:
                    view = await self.decider.wait(str(view["id"]), POLL_S)
        except NotAsked as exc:
            log.warning("gateway %s: an elicitation from %r was not asked: %s", self.settings.name, server.name, exc)
            return ElicitResult(action="cancel")
        return elicit_result(view, plan)


def _client_can(ctx: ServerRequestContext[Any, Any], params: ElicitRequestParams) -> bool:
    """The agent's client declared elicitation in this mode (a bare declaration is form mode)
    and its connection can carry a request to it (a session; the sessionless protocol's
    `input_required` rounds are not relayed: people answer those through the bridge)."""
    if not ctx.session.can_send_request:
        return False
    capabilities = ctx.session.client_capabilities
    declared = capabilities.elicitation if capabilities is not None else None
    if declared is None:
        return False
    if isinstance(params, ElicitRequestURLParams):
        return declared.url is not None
    return declared.form is not None or declared.url is None


async def _listing(operation: Any) -> Any:
    """A listing step: a downstream failure becomes the MCP error the agent sees."""
    try:
        return await operation
    except DownstreamFailed as exc:
        raise MCPError(code=INTERNAL_ERROR, message=str(exc)) from None
