"""The `temporal` source: workflows ask through an activity and get the answer as an update.

Intake: `POST /v1/temporal/<name>/requests` (the bridge's bearer tokens), posted by the
activity in `hitl_bridge_client.temporal` with the request and the workflow run that waits
(`adapters.temporal.intake`). Write-back: the outcome goes to that run as the workflow
update (or signal) it named, with the request id as the update id, so an outbox retry of a
delivery that landed is the same update to Temporal, never a second answer. Open requests'
runs are described every `watch_every`: a run that completed, failed, was terminated, reset
(its old run ends terminated) or continued as new withdraws its request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from fastapi import HTTPException
from pydantic import ValidationError
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from adapters.temporal.config import TemporalConfig
from adapters.temporal.intake import IntakeRefused, parse_ask
from adapters.temporal.payload import outcome_payload
from adapters.webhook.source import parse_body
from bridge.config import Settings
from bridge.errors import BridgeError
from bridge.http.app import describe_errors
from bridge.http.auth import check_api_token, token_name
from bridge.http.views import request_view_json
from bridge.models import OPEN_STATES, has_lone_surrogate
from bridge.ports import DeliveryError, Outcome, RequestSink
from bridge.store.base import Store
from bridge.store.query import RequestQuery

log = logging.getLogger("hitl_bridge.temporal")

ENDED = {
    WorkflowExecutionStatus.COMPLETED: "the workflow completed",
    WorkflowExecutionStatus.FAILED: "the workflow failed",
    WorkflowExecutionStatus.CANCELED: "the workflow was cancelled",
    WorkflowExecutionStatus.TERMINATED: "the workflow run was terminated (or reset)",
    WorkflowExecutionStatus.CONTINUED_AS_NEW: "the workflow continued as new",
    WorkflowExecutionStatus.TIMED_OUT: "the workflow timed out",
}


class TemporalSource:
    """One Temporal namespace; see the module docstring for the contract."""

    def __init__(self, config: TemporalConfig, settings: Settings, store: Store | None,
                 client: Client | None = None) -> None:
        self.name = config.name
        self.config = config
        self.settings = settings
        self.store = store
        self.sink: RequestSink | None = None
        self.last_error: str | None = None
        self._client = client
        self._connecting = asyncio.Lock()

    @property
    def path(self) -> str:
        return f"/v1/temporal/{self.name}/requests"

    @property
    def problems(self) -> dict[str, str]:
        """Why the last look at the workflows failed, while it keeps failing."""
        return {"watch": self.last_error} if self.last_error else {}

    async def client(self) -> Client:
        async with self._connecting:
            if self._client is None:
                api_key = self.config.api_key.get_secret_value() if self.config.api_key else None
                self._client = await Client.connect(
                    self.config.address, namespace=self.config.namespace, api_key=api_key,
                    tls=self.config.tls or api_key is not None, connect_timeout=self.config.timeout)
            return self._client

    def _handle(self, client: Client, ref: dict[str, Any]) -> WorkflowHandle[Any, Any]:
        workflow_id, run_id = ref.get("workflow_id"), ref.get("run_id")
        if not isinstance(workflow_id, str) or not isinstance(run_id, str):
            raise DeliveryError("the request has no Temporal workflow reference", permanent=True)
        return client.get_workflow_handle(workflow_id, run_id=run_id)

    # -- intake ----------------------------------------------------------------------------

    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        self.sink = sink
        return [Route(self.path, self.intake, methods=["POST"], include_in_schema=False)]

    async def intake(self, http: HttpRequest) -> Response:
        """Store the request (or find the one this workflow run already made for its key);
        201 when created, 200 when known."""
        authorization = http.headers.get("authorization")
        check_api_token(self.settings, authorization)
        body = parse_body(await http.body())
        if has_lone_surrogate(body):
            raise HTTPException(422, "the body holds text that is not valid Unicode (a lone surrogate)")
        try:
            request, ref = parse_ask(body, self.config.namespace)
        except IntakeRefused as exc:
            raise HTTPException(422, str(exc)) from None
        except ValidationError as exc:
            raise HTTPException(422, describe_errors(exc.errors())) from None
        assert self.sink is not None  # set with the routes that lead here
        caller = token_name(self.settings, authorization)
        try:
            stored, created = await self.sink.submit(
                request, source=self.name, source_ref=ref, created_by=f"api:{caller}" if caller else None)
        except BridgeError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=exc.status)
        return Response(request_view_json(stored), status_code=201 if created else 200,
                        media_type="application/json")

    # -- watching --------------------------------------------------------------------------

    async def run(self, sink: RequestSink) -> None:
        """Withdraw requests whose workflow run no longer waits, until cancelled."""
        while True:
            try:
                await self.watch(sink)
                self.last_error = None
            except (RPCError, OSError, RuntimeError) as exc:
                if str(exc) != self.last_error:
                    log.warning("temporal source %s: cannot look at workflows: %s", self.name, exc)
                self.last_error = str(exc) or type(exc).__name__
            await asyncio.sleep(self.config.watch_every.total_seconds())

    async def watch(self, sink: RequestSink) -> int:
        """One look at every open request's run; returns how many were withdrawn."""
        if self.store is None:
            return 0
        client = await self.client()
        withdrawn = 0
        async for page in self.store.pages(RequestQuery(states=tuple(OPEN_STATES), source=self.name)):
            for request in page:
                if request.external_id is None:
                    continue
                why = await self._why_ended(client, request.source_ref)
                if why is not None:
                    await sink.withdraw(self.name, request.external_id, why, created_by=request.created_by)
                    withdrawn += 1
        return withdrawn

    async def _why_ended(self, client: Client, ref: dict[str, Any]) -> str | None:
        try:
            described = await self._handle(client, ref).describe(rpc_timeout=self.config.timeout)
        except DeliveryError:
            return "the request has no Temporal workflow reference"
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return "the workflow run no longer exists"
            raise
        return ENDED.get(described.status) if described.status is not None else None

    # -- write-back ------------------------------------------------------------------------

    async def deliver(self, outcome: Outcome) -> None:
        """Send the outcome to the waiting run as its update (id: the request id) or signal."""
        ref = outcome.request.source_ref
        payload = outcome_payload(outcome)
        where = f"Temporal workflow {ref.get('workflow_id')!r} run {ref.get('run_id')!r}"
        try:
            handle = self._handle(await self.client(), ref)
            if ref.get("deliver_as") == "signal":
                await handle.signal(str(ref.get("handler")), payload, rpc_timeout=self.config.timeout)
            else:
                await handle.execute_update(str(ref.get("handler")), payload, id=outcome.request.id,
                                            rpc_timeout=self.config.timeout)
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause or exc
            raise DeliveryError(f"{where} refused the answer: {cause}", permanent=True) from None
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                if outcome.answer is None:
                    return  # nobody waits for a cancellation any more
                raise DeliveryError(f"{where} no longer waits: {exc.message}", permanent=True) from None
            raise DeliveryError(f"{where}: {exc.message}") from None
        except (OSError, RuntimeError) as exc:
            raise DeliveryError(f"{where}: {exc}") from None

    async def close(self) -> None:
        self._client = None
