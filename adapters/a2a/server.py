"""The `a2a` source: the bridge as an A2A agent ("people"), with the official `a2a-sdk` server.

`/.well-known/agent-card.json` is the card; `POST /a2a` is JSON-RPC (`message/send`,
`message/stream`, `tasks/get`, `tasks/cancel`, push notification configs), behind the
bridge's bearer tokens. A message creates one request (external id `a2a:<task id>`, by
`api:<token name>`); the task is `working` while people are asked and ends `completed` with
the answer as an artifact, `canceled` when the request is cancelled, `failed` when it
expires with no answer. Push notification configs are kept with the SDK's store and sent
by its sender. Tasks and push configs are kept in the bridge's store (adapters.a2a.tasks):
a task outlives the daemon that took it and every replica reads it; one whose executor is
gone when its request closes is finished by the outcome's delivery.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import httpx
from a2a.helpers.proto_helpers import new_task, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.tasks import BasePushNotificationSender, TaskUpdater
from a2a.types import TaskState
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from adapters.a2a.mapping import MessageRefused, agent_card, answer_parts, refuse_secrets, request_from_message
from adapters.a2a.remote import RemoteAgent, RemoteTasks
from adapters.a2a.tasks import TERMINAL, StoredPushConfigs, StoredTasks, finished
from adapters.webhook.egress import CallbackPolicy, GuardedTransport
from bridge.config import Settings
from bridge.config_daemon import Duration
from bridge.errors import BridgeError
from bridge.http.auth import token_name, token_ok
from bridge.models import Request
from bridge.ports import Outcome, RequestSink
from bridge.store.base import Store

log = logging.getLogger("hitl_bridge.a2a")

RPC_PATH = "/a2a"
WAIT_STEP_S = 30.0
CALLER_STATE = "hitl_bridge_caller"


class A2aConfig(BaseModel):
    """The `sources: - type: a2a` section (see docs/engines/a2a.md)."""

    model_config = ConfigDict(extra="forbid")

    #: requests get `source: <name>`
    name: str = Field(default="a2a", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    #: the agent's name on its card
    agent_name: str = Field(default="people", min_length=1, max_length=100)
    #: the public URL of the JSON-RPC endpoint on the card (default: http.public_url + /a2a)
    url: str | None = Field(default=None, pattern=r"^https?://", max_length=2000)
    #: remote agents whose `input-required` tasks people answer (adapters.a2a.remote)
    agents: list[RemoteAgent] = Field(default_factory=list, max_length=100)
    #: how often the remote agents' waiting tasks are listed
    poll_every: Duration = timedelta(seconds=5)
    #: the longest one call to a remote agent may take
    timeout: Duration = timedelta(seconds=10)


class CallerContextBuilder(DefaultServerCallContextBuilder):
    """Carries the verified caller (the API token's name) to the executor."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def build(self, request: HttpRequest) -> ServerCallContext:
        context = super().build(request)
        context.state[CALLER_STATE] = token_name(self.settings, request.headers.get("authorization"))
        headers = context.state.get("headers")
        if isinstance(headers, dict):  # the bearer token stays out of the task's context
            context.state["headers"] = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        return context


class PeopleExecutor(AgentExecutor):
    """Runs one task: submit the request, wait for it to close, report the outcome."""

    def __init__(self, source: A2aSource) -> None:
        self.source = source

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        sink = self.source.sink
        assert sink is not None and context.task_id and context.context_id and context.message is not None
        if context.current_task is None:  # the SDK wants the task before its first status
            await event_queue.enqueue_event(new_task(context.task_id, context.context_id,
                                                     TaskState.TASK_STATE_SUBMITTED, history=[context.message]))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        caller = context.call_context.state.get(CALLER_STATE)
        tasks = self.source.tasks
        await tasks.mark_open(context.task_id)  # from here on someone must finish it (a restart included)
        try:
            asked = refuse_secrets(request_from_message(
                context.message, context.get_user_input(), dict(context.metadata), context.task_id,
                context.context_id))
            request, _ = await sink.submit(asked, source=self.source.name,
                                           source_ref={"task_id": context.task_id},
                                           created_by=f"api:{caller}" if caller else None)
        except (MessageRefused, ValidationError, BridgeError) as exc:
            await tasks.claim(context.task_id)
            why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            await updater.reject(new_text_message(f"refused: {why}", context_id=context.context_id,
                                                  task_id=context.task_id))
            return
        running = asyncio.current_task()
        assert running is not None
        self.source.live[context.task_id] = running
        try:
            await self._run(context.task_id, context.context_id, request, updater, event_queue)
        finally:
            self.source.live.pop(context.task_id, None)

    async def _run(self, task_id: str, context_id: str, request: Request, updater: TaskUpdater,
                   event_queue: EventQueue) -> None:
        sink = self.source.sink
        assert sink is not None
        await updater.start_work(new_text_message(f"asked people: request {request.id}",
                                                  context_id=context_id, task_id=task_id))
        loop = asyncio.get_running_loop()
        while request.is_open:
            began = loop.time()
            found = await sink.wait(request.id, WAIT_STEP_S)
            if found is None:
                break
            request = found
            if request.is_open and loop.time() - began < WAIT_STEP_S / 2:
                # woken open before its time: the daemon is stopping. The task stays `working`
                # in the store (finished when its request closes); `close` cancels this.
                await loop.create_future()
        if not await self.source.tasks.claim(task_id):  # a delivery on another replica finished it
            _owner, stored = await self.source.tasks.get_any(task_id)
            if stored is not None:
                await event_queue.enqueue_event(stored)
            return
        if request.answer is not None:
            await updater.add_artifact(answer_parts(request.answer), name="answer",
                                       metadata={"request_id": request.id})
            await updater.complete()
        elif request.state.value == "cancelled":
            await updater.cancel()
        else:
            await updater.failed(new_text_message(f"request {request.id} closed {request.state.value} "
                                                  "with no answer", context_id=context_id, task_id=task_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """`tasks/cancel`: withdraw the request (the waiting `execute` then reports it)."""
        sink = self.source.sink
        assert sink is not None and context.task_id
        caller = context.call_context.state.get(CALLER_STATE)
        await sink.withdraw(self.source.name, f"a2a:{context.task_id}", "cancelled by the A2A client",
                            created_by=f"api:{caller}" if caller else None)


class A2aSource:
    """Contributes the card and the JSON-RPC endpoint; delivers nothing itself (the waiting
    task reports the outcome)."""

    def __init__(self, config: A2aConfig, settings: Settings, store: Store) -> None:
        self.name = config.name
        self.remote = RemoteTasks(config.name, config.agents, store, config.timeout)
        self.tasks = StoredTasks(store)
        self.push_configs = StoredPushConfigs(store)
        self.live: dict[str, asyncio.Task[Any]] = {}  # tasks whose executor runs in this process
        self.config = config
        self.settings = settings
        self.sink: RequestSink | None = None
        http = settings.http
        # push notifications go where callbacks may (http.callback_allow), through the same guard
        self.policy = CallbackPolicy(http.callback_allow, allow_private=http.callback_allow_private
                                     or http.loopback_only)
        self.http = httpx.AsyncClient(timeout=10, follow_redirects=False, trust_env=False,
                                      transport=GuardedTransport(self.policy))
        self.push_sender = BasePushNotificationSender(self.http, self.push_configs)

    async def push_url_allowed(self, url: str) -> bool:
        """A push notification URL is refused where a callback URL would be."""
        return self.policy.refusal(url) is None

    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        self.sink = sink
        public = self.settings.http.public_url or f"http://{self.settings.http.listen}"
        base = self.config.url or f"{public.rstrip('/')}{RPC_PATH}"
        card = agent_card(base, self.config.agent_name)
        handler = DefaultRequestHandler(
            agent_executor=PeopleExecutor(self), task_store=self.tasks, agent_card=card,
            push_config_store=self.push_configs, push_sender=self.push_sender,
            push_url_validator=self.push_url_allowed)
        rpc = create_jsonrpc_routes(handler, RPC_PATH, context_builder=CallerContextBuilder(self.settings),
                                    enable_v0_3_compat=True)  # callers on the 0.3 protocol too
        guarded = [Route(r.path, TokenGuard(r.app, self.settings), methods=r.methods) for r in rpc
                   if isinstance(r, Route)]
        return [*create_agent_card_routes(card), *guarded]

    @property
    def problems(self) -> dict[str, str]:
        """Remote agents whose last poll failed, while it keeps failing."""
        return {f"agent {name}": why for name, why in self.remote.errors.items()}

    async def run(self, sink: RequestSink) -> None:
        """Poll the remote agents (if any) until cancelled."""
        if not self.remote.agents:
            return
        while True:
            await self.remote.scan(sink)
            await asyncio.sleep(self.config.poll_every.total_seconds())

    async def deliver(self, outcome: Outcome) -> None:
        """Reply in a remote agent's task. The bridge's own tasks report their outcome in
        `execute` while it runs; one whose executor is gone (a restart) is finished here."""
        if "agent" in outcome.request.source_ref:
            await self.remote.deliver(outcome)
            return
        task_id = outcome.request.source_ref.get("task_id")
        if isinstance(task_id, str) and task_id not in self.live:
            await self.finish(task_id, outcome.request)

    async def finish(self, task_id: str, request: Request) -> None:
        """Write the closed request's outcome into its task and push it, once."""
        owner, task = await self.tasks.get_any(task_id)
        if task is None or owner is None or task.status.state in TERMINAL:
            return
        if not await self.tasks.claim(task_id):
            return  # its executor, or another delivery, finished it
        done = finished(task, request)
        try:
            await self.tasks.save_as(owner, done)
        except BaseException:
            await self.tasks.mark_open(task_id)  # the delivery is tried again: finish it then
            raise
        log.info("A2A task %s finished after its executor was gone: %s", task_id,
                 TaskState.Name(done.status.state))
        await self.push_sender.send_notification(task_id, done)

    async def close(self) -> None:
        """Stop the running executors first (their tasks stay `working` in the store, finished
        when their requests close: a stopping daemon is not a failed task)."""
        running = list(self.live.values())
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await self.remote.close()
        await self.http.aclose()


class TokenGuard:
    """401 unless the call carries one of http.api_tokens (open on a loopback bridge without any)."""

    def __init__(self, app: Any, settings: Settings) -> None:
        self.app, self.settings = app, settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode("latin-1") or None
        if not token_ok(self.settings, authorization):
            reply = JSONResponse({"detail": "missing or wrong bearer token (Authorization: Bearer <one of "
                                  "http.api_tokens>)"}, status_code=401, headers={"www-authenticate": "Bearer"})
            await reply(scope, receive, send)
            return
        await self.app(scope, receive, send)

