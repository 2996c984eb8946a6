"""The `agui` source: AG-UI runs pass through the bridge, and interrupts are asked of people.

A front end (or a script) posts its `RunAgentInput` to `POST /v1/agui/<name>/runs` (the
bridge's bearer tokens) instead of to the agent: the bridge forwards it to the configured
AG-UI endpoint and relays the event stream back unchanged, reading it as it passes. A run
that finishes with an interrupt outcome (`RUN_FINISHED`, `outcome.type: interrupt`) makes
one request per interrupt. The answer resumes the thread with a run of the bridge's own
(`resume: [{interruptId, status: resolved, payload}]`), whose stream is read the same way
(a new interrupt there is a new request). A later run on the same thread that comes
through the bridge while a request is open (the front end answered it, or moved on)
withdraws it: the interrupt is no longer waiting.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta

import httpx
from ag_ui.core import EventType, RunAgentInput
from fastapi import HTTPException
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from starlette.requests import Request as HttpRequest
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from adapters.agui.mapping import request_for, resume_entry
from adapters.agui.stream import StreamBroken, parse_event, sse_data
from adapters.webhook.source import parse_body
from bridge.config import Settings
from bridge.config_daemon import Duration
from bridge.errors import BridgeError
from bridge.http.app import describe_errors
from bridge.http.auth import check_api_token, token_name
from bridge.models import OPEN_STATES
from bridge.ports import DeliveryError, Outcome, RequestSink
from bridge.store.base import Store
from bridge.store.query import RequestQuery

log = logging.getLogger("hitl_bridge.agui")


class AguiConfig(BaseModel):
    """The `sources: - type: agui` section (see docs/engines/agui.md)."""

    model_config = ConfigDict(extra="forbid")

    #: requests get `source: <name>`; runs go through `/v1/agui/<name>/runs`
    name: str = Field(default="agui", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    #: the AG-UI agent endpoint (where `RunAgentInput` is POSTed)
    url: str = Field(pattern=r"^https?://", max_length=2000)
    #: headers the agent wants (`Authorization: Bearer ${T}`); never logged
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    #: the longest a run's stream may stay silent
    timeout: Duration = timedelta(seconds=120)


class AguiSource:
    """One AG-UI agent endpoint; see the module docstring for the contract."""

    def __init__(self, config: AguiConfig, settings: Settings, store: Store | None = None) -> None:
        self.name = config.name
        self.store = store
        self.config = config
        self.settings = settings
        self.sink: RequestSink | None = None
        self.http = httpx.AsyncClient(
            timeout=config.timeout.total_seconds(), trust_env=False,
            headers={k: v.get_secret_value() for k, v in config.headers.items()})
        self.waiting: dict[str, dict[str, str]] = {}  # thread → interrupt id → created_by
        self.resumed: set[str] = set()  # request ids whose resume run was made here

    @property
    def path(self) -> str:
        return f"/v1/agui/{self.name}/runs"

    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        self.sink = sink
        return [Route(self.path, self.proxy, methods=["POST"], include_in_schema=False)]

    async def run(self, sink: RequestSink) -> None:
        """Remember the interrupts that open requests wait on (after a restart, their answers
        still resume the thread); runs themselves arrive through http_routes()."""
        await self._remember_open()

    async def _remember_open(self) -> None:
        if self.store is None:
            return
        async for page in self.store.pages(RequestQuery(states=tuple(OPEN_STATES), source=self.name)):
            for request in page:
                thread_id, interrupt_id = request.source_ref.get("thread_id"), request.source_ref.get("interrupt_id")
                if isinstance(thread_id, str) and isinstance(interrupt_id, str):
                    self.waiting.setdefault(thread_id, {})[interrupt_id] = request.created_by or ""

    async def proxy(self, http: HttpRequest) -> Response:
        """Forward a run to the agent and relay its events; interrupts become requests."""
        authorization = http.headers.get("authorization")
        check_api_token(self.settings, authorization)
        try:
            run = RunAgentInput.model_validate(parse_body(await http.body()))
        except ValidationError as exc:
            raise HTTPException(422, describe_errors(exc.errors())) from None
        caller = token_name(self.settings, authorization)
        created_by = f"api:{caller}" if caller else None
        await self._moved_on(run)
        body = run.model_dump(mode="json", by_alias=True, exclude_none=True)
        try:
            upstream = await self.http.send(self.http.build_request(
                "POST", self.config.url, json=body, headers={"accept": "text/event-stream"}), stream=True)
        except httpx.HTTPError as exc:
            raise HTTPException(502, f"the AG-UI agent cannot be reached: {exc}") from None
        if upstream.status_code != 200:
            await upstream.aclose()
            raise HTTPException(502, f"the AG-UI agent answered HTTP {upstream.status_code}")

        async def relay() -> AsyncIterator[str]:
            try:
                async for line in self._watch(upstream.aiter_lines(), run.thread_id, created_by):
                    yield line + "\n"
            finally:
                await upstream.aclose()

        return StreamingResponse(relay(), media_type="text/event-stream")

    async def _watch(self, lines: AsyncIterator[str], thread_id: str,
                     created_by: str | None) -> AsyncIterator[str]:
        """Pass `lines` on; submit a request for each interrupt the run finishes with."""
        pending: list[str] = []
        async for line in lines:
            yield line
            if line.startswith("data:"):
                pending.append(line)
            elif line == "" and pending:
                chunk, pending = pending, []
                async for data in sse_data(_aiter([*chunk, ""])):
                    await self._on_event(data, thread_id, created_by)

    async def _on_event(self, data: str, thread_id: str, created_by: str | None) -> None:
        try:
            event = parse_event(data)
        except StreamBroken as exc:
            log.warning("agui source %s: thread %s: %s", self.name, thread_id, exc)
            return
        if event.type != EventType.RUN_FINISHED or event.outcome is None or event.outcome.type != "interrupt":
            return
        assert self.sink is not None  # set with the routes that lead here
        for interrupt in event.outcome.interrupts:
            try:
                asked = request_for(interrupt, thread_id, self.name)
                request, _ = await self.sink.submit(asked, source=self.name, created_by=created_by, source_ref={
                    "thread_id": thread_id, "interrupt_id": interrupt.id, "kind": asked.questions[0].kind.value})
            except (ValidationError, BridgeError) as exc:
                log.warning("agui source %s: interrupt %s not asked: %s", self.name, interrupt.id, exc)
                continue
            self.waiting.setdefault(thread_id, {})[interrupt.id] = request.created_by or ""

    async def _moved_on(self, run: RunAgentInput) -> None:
        """A run on a thread with open requests: their interrupts no longer wait."""
        open_ = self.waiting.pop(run.thread_id, {})
        answered = {entry.interrupt_id for entry in run.resume or []}
        assert self.sink is not None
        for interrupt_id, created_by in open_.items():
            why = ("the interrupt was answered in the front end" if interrupt_id in answered
                   else "a new run on the thread left the interrupt behind")
            await self.sink.withdraw(self.name, f"agui:{run.thread_id}:{interrupt_id}"[:200], why,
                                     created_by=created_by or None)

    async def deliver(self, outcome: Outcome) -> None:
        """Resume the thread with the answer, once. No answer: nothing is sent (the front
        end may still answer the interrupt itself)."""
        request, ref = outcome.request, outcome.request.source_ref
        if outcome.answer is None or request.id in self.resumed:
            return
        thread_id, interrupt_id = ref.get("thread_id"), ref.get("interrupt_id")
        if not isinstance(thread_id, str) or not isinstance(interrupt_id, str):
            raise DeliveryError("the request has no AG-UI thread/interrupt reference", permanent=True)
        entry = resume_entry(interrupt_id, str(ref.get("kind")), outcome.answer)
        run = RunAgentInput(thread_id=thread_id, run_id=f"hitl-{request.id}", messages=[], resume=[entry])
        # a run through the bridge that answered or left the interrupt has withdrawn the
        # request (no answer to deliver); this one no longer waits either
        self.waiting.get(thread_id, {}).pop(interrupt_id, None)
        self.resumed.add(request.id)
        body = run.model_dump(mode="json", by_alias=True, exclude_none=True)
        try:
            async with self.http.stream("POST", self.config.url, json=body,
                                        headers={"accept": "text/event-stream"}) as reply:
                if reply.status_code != 200:
                    raise DeliveryError(f"the AG-UI agent answered HTTP {reply.status_code} to the resume",
                                        permanent=reply.status_code < 500)
                async for _ in self._watch(reply.aiter_lines(), thread_id, request.created_by):
                    pass
        except httpx.HTTPError as exc:
            # the resume may have reached the agent: not sent again (the record says why)
            raise DeliveryError(f"the AG-UI resume run broke off: {exc}", permanent=True) from None

    async def close(self) -> None:
        await self.http.aclose()


async def _aiter(lines: list[str]) -> AsyncIterator[str]:
    for line in lines:
        yield line


__all__ = ["AguiConfig", "AguiSource"]
