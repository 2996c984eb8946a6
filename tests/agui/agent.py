"""A real AG-UI server: `ag-ui-langgraph` over a small LangGraph graph that asks whether to
deploy (an interrupt with a boolean response schema) and records what it then does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from typing_extensions import TypedDict

from bridge.http.loopback import serving

QUESTION = "Deploy billing to prod?"


class State(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    decision: str


@dataclass
class Deployer:
    """The graph and what it did after each resume."""

    acted: list[str] = field(default_factory=list)

    def graph(self) -> Any:
        def ask(state: State) -> State:
            approved = interrupt({"message": QUESTION, "reason": "approval", "responseSchema": {"type": "boolean"}})
            return {"decision": "deployed" if approved is True else "held back"}

        def act(state: State) -> State:
            self.acted.append(state.get("decision", "?"))
            return {}

        builder = StateGraph(State)
        builder.add_node("ask", ask)
        builder.add_node("act", act)
        builder.add_edge(START, "ask")
        builder.add_edge("ask", "act")
        builder.add_edge("act", END)
        return builder.compile(checkpointer=InMemorySaver())


@dataclass
class RunningAgent:
    url: str
    deployer: Deployer


@asynccontextmanager
async def agui_agent() -> AsyncIterator[RunningAgent]:
    deployer = Deployer()
    app = FastAPI()
    add_langgraph_fastapi_endpoint(app, LangGraphAgent(name="deployer", graph=deployer.graph(),
                                                       emit_interrupt_outcome=True), "/agent")
    async with serving(app, "the AG-UI agent") as port:
        yield RunningAgent(f"http://127.0.0.1:{port}/agent", deployer)
