"""Small LangGraph graphs served by `langgraph dev` in the tests, one per interrupt shape.

Every graph appends what `interrupt()` returned to `answers`, so a test can read the thread
state and check that the engine resumed with exactly the answer given in the bridge.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    topic: str
    answers: Annotated[list[Any], operator.add]


def _single(node: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node("ask", node)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile()


def _ask_once(state: State) -> State:
    topic = state.get("topic") or "the release"
    return {"answers": [interrupt(f"What should the notes say about {topic}?")]}


def _ask_twice(state: State) -> State:
    first = interrupt("Which environment?")
    second = interrupt(f"Deploy to {first}: which version?")
    return {"answers": [first, second]}


def _ask_plain_dict(state: State) -> State:
    return {"answers": [interrupt({"question": "Name the new branch", "hint": "feature/..."})]}


def _ask_inbox(state: State) -> State:
    request = {
        "action_request": {"action": "run_command", "args": {"command": "ls", "flags": ["-l"]}},
        "config": {
            "allow_ignore": True,
            "allow_respond": True,
            "allow_edit": True,
            "allow_accept": True,
        },
        "description": "Please review the command before it runs",
    }
    return {"answers": [interrupt([request])[0]]}


def _ask_inbox_accept_ignore(state: State) -> State:
    request = {
        "action_request": {"action": "send_email", "args": {"to": "ops@example.com"}},
        "config": {
            "allow_ignore": True,
            "allow_respond": False,
            "allow_edit": False,
            "allow_accept": True,
        },
        "description": "Send the weekly report?",
    }
    return {"answers": [interrupt([request])[0]]}


def _ask_review(state: State) -> State:
    request = {
        "action_requests": [
            {"name": "write_file", "args": {"path": "notes.md", "text": "hi"},
             "description": "Write the release notes"},
            {"name": "execute_sql", "args": {"query": "DELETE FROM runs"},
             "description": "Clean up old runs"},
        ],
        "review_configs": [
            {"action_name": "write_file", "allowed_decisions": ["approve", "edit", "reject"]},
            {"action_name": "execute_sql", "allowed_decisions": ["approve", "reject"]},
        ],
    }
    return {"answers": [interrupt(request)]}


def _ask_hostile(state: State) -> State:
    nested: Any = "bottom"
    for _ in range(60):
        nested = {"deeper": nested}
    value = {"action_requests": "not a list", "review_configs": 7, "blob": "x" * 200_000,
             "nested": nested}
    return {"answers": [interrupt(value)]}


def _ask_parallel_a(state: State) -> State:
    return {"answers": [interrupt("Left branch: go?")]}


def _ask_parallel_b(state: State) -> State:
    return {"answers": [interrupt("Right branch: go?")]}


def _parallel() -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node("left", _ask_parallel_a)
    builder.add_node("right", _ask_parallel_b)
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge("left", END)
    builder.add_edge("right", END)
    return builder.compile()


once = _single(_ask_once)
twice = _single(_ask_twice)
plain_dict = _single(_ask_plain_dict)
inbox = _single(_ask_inbox)
inbox_accept_ignore = _single(_ask_inbox_accept_ignore)
review = _single(_ask_review)
hostile = _single(_ask_hostile)
parallel = _parallel()
