"""Remote A2A agents' tasks that wait for input (`input-required`) become requests; the
person's reply is sent back in the same task, with the official `a2a-sdk` client.

Each poll lists an agent's tasks in `input-required` (`ListTasks`, paged). A task waiting
again after the reply has a new status message, so it becomes a new request. A task that
leaves `input-required` while its request is open (answered elsewhere, cancelled, failed)
withdraws the request. The reply's message id is the request id: a retry after a lost reply
finds it in the task's history and sends nothing.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import httpx
from a2a.client import A2ACardResolver, A2AClientError, Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_message_text, new_data_part, new_text_part
from a2a.types import (
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from adapters.a2a.mapping import MessageRefused, request_from_message
from bridge.models import OPEN_STATES, RequestIn
from bridge.ports import DeliveryError, Outcome, RequestSink
from bridge.store.base import Store
from bridge.store.query import RequestQuery

log = logging.getLogger("hitl_bridge.a2a")

PAGE_SIZE = 100
MAX_PAGES = 100


class RemoteAgent(BaseModel):
    """One remote A2A agent whose waiting tasks people answer."""

    model_config = ConfigDict(extra="forbid")

    #: the agent's name in requests (`agent`) and labels
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    #: its base URL (the card is read from /.well-known/agent-card.json there)
    url: str = Field(pattern=r"^https?://", max_length=2000)
    #: a bearer token the agent wants (never logged)
    token: SecretStr | None = None
    #: the JSON-RPC endpoint to use instead of the card's (a card that names an inside address)
    endpoint: str | None = Field(default=None, pattern=r"^https?://", max_length=2000)


class RemoteTasks:
    """Polls the configured agents; `deliver` replies in the task."""

    def __init__(self, source: str, agents: list[RemoteAgent], store: Store | None, timeout: timedelta) -> None:
        self.source = source
        self.agents = {agent.name: agent for agent in agents}
        self.store = store
        self.timeout = timeout.total_seconds()
        self.clients: dict[str, Client] = {}
        self.known: dict[str, set[str]] = {}  # agent → task ids with open requests
        self.errors: dict[str, str] = {}
        self._seeded = False

    async def client(self, name: str) -> Client:
        if name not in self.clients:
            agent = self.agents[name]
            headers = {"authorization": f"Bearer {agent.token.get_secret_value()}"} if agent.token else {}
            http = httpx.AsyncClient(headers=headers, timeout=self.timeout, trust_env=False)
            card = await A2ACardResolver(http, agent.url).get_agent_card()
            if agent.endpoint:
                for interface in card.supported_interfaces:
                    interface.url = agent.endpoint
            self.clients[name] = await create_client(card, ClientConfig(httpx_client=http, streaming=False))
        return self.clients[name]

    async def scan(self, sink: RequestSink) -> int:
        """One poll of every agent; returns how many requests were created."""
        if not self._seeded:
            await self._seed()
        created = 0
        for name in self.agents:
            try:
                created += await self._scan_agent(sink, name)
                self.errors.pop(name, None)
            except (A2AClientError, httpx.HTTPError, ValueError) as exc:
                if self.errors.get(name) != str(exc):
                    log.warning("a2a source %s: agent %s: %s", self.source, name, exc)
                self.errors[name] = str(exc) or type(exc).__name__
        return created

    async def _scan_agent(self, sink: RequestSink, name: str) -> int:
        client = await self.client(name)
        waiting: dict[str, Task] = {}
        token = ""
        for _ in range(MAX_PAGES):
            page = await client.list_tasks(ListTasksRequest(
                status=TaskState.TASK_STATE_INPUT_REQUIRED, page_size=PAGE_SIZE, page_token=token, history_length=0))
            waiting.update({task.id: task for task in page.tasks})
            token = page.next_page_token
            if not token:
                break
        for task_id in sorted(self.known.get(name, set()) - set(waiting)):
            for request in await self._open(name, task_id):
                await sink.withdraw(self.source, str(request.external_id), "the task no longer waits for input")
        created = 0
        for task in waiting.values():
            asked = self._request(name, task)
            if asked is None:
                continue
            _, new = await sink.submit(asked, source=self.source, source_ref={
                "agent": name, "task_id": task.id, "context_id": task.context_id})
            created += int(new)
        self.known[name] = set(waiting)
        return created

    def _request(self, name: str, task: Task) -> RequestIn | None:
        status = task.status.message
        marker = status.message_id or task.status.timestamp.ToJsonString()
        try:
            asked = request_from_message(status, get_message_text(status) or "The agent waits for your input.",
                                         {}, task.id, task.context_id)
        except (MessageRefused, ValidationError) as exc:
            log.warning("a2a source %s: agent %s task %s not shown: %s", self.source, name, task.id, exc)
            return None
        return asked.model_copy(update={
            "external_id": f"a2a:{name}:{task.id}:{marker}"[:200], "agent": name,
            "labels": {**asked.labels, "a2a_agent": name},
            "context": {**asked.context, "a2a": {"agent": name, "task_id": task.id, "context_id": task.context_id}}})

    async def _open(self, name: str, task_id: str) -> list[Any]:
        if self.store is None:
            return []
        found = []
        async for page in self.store.pages(RequestQuery(states=tuple(OPEN_STATES), source=self.source)):
            found += [r for r in page if r.source_ref.get("agent") == name and r.source_ref.get("task_id") == task_id]
        return found

    async def _seed(self) -> None:
        """After a restart, remember the tasks of open requests, so that tasks answered while
        the bridge was down are withdrawn at the first poll."""
        self._seeded = True
        if self.store is None:
            return
        async for page in self.store.pages(RequestQuery(states=tuple(OPEN_STATES), source=self.source)):
            for request in page:
                agent, task_id = request.source_ref.get("agent"), request.source_ref.get("task_id")
                if isinstance(agent, str) and isinstance(task_id, str):
                    self.known.setdefault(agent, set()).add(task_id)

    async def deliver(self, outcome: Outcome) -> None:
        """Reply in the task with the answer (text and data parts), once."""
        answer, ref = outcome.answer, outcome.request.source_ref
        name, task_id, context_id = ref.get("agent"), ref.get("task_id"), ref.get("context_id")
        if answer is None:
            return  # the task keeps waiting: someone else may answer it
        if name not in self.agents or not isinstance(task_id, str):
            raise DeliveryError(f"no configured A2A agent {name!r} for this request", permanent=True)
        where = f"A2A agent {name} task {task_id}"
        try:
            client = await self.client(str(name))
            task = await client.get_task(GetTaskRequest(id=task_id, history_length=50))
            if any(m.message_id == outcome.request.id for m in task.history):
                return  # an earlier attempt landed; its reply was lost
            if task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
                raise DeliveryError(f"{where} no longer waits for input", permanent=True)
            values = dict(answer.values)
            only = next(iter(values.values())) if len(values) == 1 else None
            parts = ([new_text_part(only)] if isinstance(only, str) else []) + [
                new_data_part({"values": values, "responder": answer.responder.key, "reason": answer.reason})]
            reply = Message(role=Role.ROLE_USER, message_id=outcome.request.id, task_id=task_id,
                            context_id=str(context_id or task.context_id), parts=parts)
            async for _ in client.send_message(SendMessageRequest(
                    message=reply, configuration=SendMessageConfiguration(return_immediately=True))):
                break
        except (A2AClientError, httpx.HTTPError) as exc:
            raise DeliveryError(f"{where}: {exc}") from None

    async def close(self) -> None:
        for client in self.clients.values():
            await client.close()
        self.clients.clear()
