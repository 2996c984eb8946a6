"""A remote A2A agent built with the real `a2a-sdk` server, served on 127.0.0.1: each task asks
which environment to deploy to (`input-required`), then completes with the reply."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from a2a.helpers.proto_helpers import new_task, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState
from starlette.applications import Starlette

from bridge.http.loopback import serving

QUESTION = "Which environment should I deploy to?"


@dataclass
class DeployAgent(AgentExecutor):
    """Asks once per task; records every reply it gets."""

    replies: list[str] = field(default_factory=list)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id and context.message is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:
            await event_queue.enqueue_event(new_task(context.task_id, context.context_id,
                                                     TaskState.TASK_STATE_SUBMITTED, history=[context.message]))
            await updater.requires_input(new_text_message(QUESTION, context_id=context.context_id,
                                                          task_id=context.task_id))
            return
        reply = context.get_user_input()
        self.replies.append(reply)
        await updater.add_artifact([new_text_part(f"deploying to {reply}")], name="result")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


@dataclass
class RunningAgent:
    url: str
    executor: DeployAgent


@asynccontextmanager
async def remote_agent() -> AsyncIterator[RunningAgent]:
    executor = DeployAgent()
    card = AgentCard(name="deployer", version="1", description="Deploys services.",
                     supported_interfaces=[AgentInterface(url="http://127.0.0.1/", protocol_binding="JSONRPC",
                                                          protocol_version="1.0")],
                     capabilities=AgentCapabilities(streaming=True),
                     default_input_modes=["text/plain"], default_output_modes=["text/plain"],
                     skills=[AgentSkill(id="deploy", name="Deploy", description="Deploys", tags=["ops"])])
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/rpc")])
    async with serving(app, "the remote A2A agent") as port:
        yield RunningAgent(f"http://127.0.0.1:{port}", executor)
