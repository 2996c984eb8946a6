"""A Teal Agents service as PROTOCOLS.md §3 describes it (sk-agents `tealagents/v1alpha1`).

- `POST /{agent}/{version}` with a `UserMessage` and an `Authorization` header starts a
  task; the scripted agent asks for approval of its first batch of tool calls and the
  reply is a `StateResponse` with status `Paused` and a `HitlResponse` as content.
- `POST /{agent}/{version}/tealagents/v1alpha1/resume/{request_id}` with
  `{"action": "approve"|"reject"}` (the body decides, the query string is ignored), only
  from the task's owner. Approve: the next batch pauses again **with the same
  request_id**, or the agent finishes (`TealAgentsResponse`). Reject: `RejectedToolResponse`.
- Every error — unknown request, wrong owner, task not paused, bad body — is HTTP 500
  `{"detail": "Internal Server Error"}`, as the real service answers.
- As the real service, an approval marks the task `Running` at once and answers only after
  the tools and the rest of the agent's turn have run: `resume_delay` seconds here. A
  finished task stays `Running` with the output as its last item (Teal never writes
  `Completed`). `drop_resumes` makes the next resume calls break off the connection after
  Teal has taken the decision (the turn still runs to its end).
- `GET /tasks/{task_id}` answers the task as Teal's store keeps it (`AgentTask`): the real
  service has no such route; it stands for the read route a deployment puts in front of
  that store (the Teal source's `task_url`).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tests.engines.harness import FakeServer

ERROR = {"detail": "Internal Server Error"}
RESUME_BASE = "/tealagents/v1alpha1/resume"


def tool_call(plugin: str, function: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    """A serialized semantic-kernel FunctionCallContent, as `model_dump()` writes it."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "content_type": "function_call",
        "inner_content": None,
        "ai_model_id": "gpt-4o",
        "metadata": {},
        "id": f"call_{uuid.uuid4().hex[:12]}",
        "call_id": None,
        "index": None,
        "name": f"{plugin}-{function}",
        "function_name": function,
        "plugin_name": plugin,
        "arguments": args,
    }


@dataclass
class Task:
    task_id: str
    session_id: str
    owner: str  # the Authorization header value of the caller who started it
    batches: list[list[dict[str, Any]]]
    status: str = "Running"
    request_id: str = ""
    step: int = 0
    decisions: list[str] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)  # AgentTask.items

    def note(self, role: str, content: str, pending: list[dict[str, Any]] | None = None) -> None:
        self.items.append({
            "task_id": self.task_id, "role": role, "request_id": self.request_id,
            "item": {"content_type": "text", "content": content}, "updated": "2026-11-26T00:00:00",
            "pending_tool_calls": pending, "chat_history": None,
        })

    def view(self) -> dict[str, Any]:
        """The task as Teal's store keeps it (`AgentTask.model_dump()`)."""
        return {"task_id": self.task_id, "session_id": self.session_id, "user_id": self.owner,
                "items": self.items, "created_at": "2026-11-26T00:00:00", "last_updated": "2026-11-26T00:00:00",
                "status": self.status}


class Dropped(Response):
    """Starts the reply, then breaks the connection off before its body is complete."""

    def __init__(self) -> None:
        super().__init__()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"1000")]})
        await send({"type": "http.response.body", "body": b'{"out', "more_body": True})
        raise ConnectionResetError("the stand-in drops this resume call")


class FakeTeal:
    """State and routes of the fake agent service `agent/version`."""

    def __init__(self, agent: str = "ReleaseBot", version: str = "0.1") -> None:
        self.agent = agent
        self.version = version
        self.tasks: dict[str, Task] = {}
        self.by_request: dict[str, str] = {}
        self.next_plan: list[list[dict[str, Any]]] = [[tool_call("Deploy", "ship", {"env": "prod"})]]
        self.resume_delay = 0.0  # seconds the agent's turn takes after an approval
        self.drop_resumes = 0  # that many next resume calls break off after Teal took the decision
        self.fail_turns = 0  # that many next approved turns fail (a tool or LLM error): HTTP 500, task left Running
        self.turns: set[asyncio.Task[dict[str, Any]]] = set()
        prefix = f"/{agent}/{version}"
        app = Starlette(
            routes=[
                Route(prefix, self._invoke, methods=["POST"]),
                Route(prefix + RESUME_BASE + "/{request_id}", self._resume, methods=["POST"]),
                Route("/tasks/{task_id}", self._task, methods=["GET"]),
            ]
        )
        self.server = FakeServer(app, error_body=ERROR)

    @property
    def base_url(self) -> str:
        return self.server.url

    @property
    def service_url(self) -> str:
        return f"{self.server.url}/{self.agent}/{self.version}"

    def pause_body(self, task: Task) -> dict[str, Any]:
        return {
            "session_id": task.session_id,
            "task_id": task.task_id,
            "request_id": task.request_id,
            "message": "Human intervention required.",
            "approval_url": f"{RESUME_BASE}/{task.request_id}?action=approve",
            "rejection_url": f"{RESUME_BASE}/{task.request_id}?action=reject",
            "tool_calls": task.batches[task.step],
        }

    def start_task(self, owner: str, plan: list[list[dict[str, Any]]] | None = None) -> dict[str, Any]:
        """What `POST /{agent}/{version}` answers (a `StateResponse`); usable without HTTP."""
        task = Task(
            task_id=str(uuid.uuid4()),
            session_id=str(uuid.uuid4()),
            owner=owner,
            batches=plan if plan is not None else self.next_plan,
            request_id=str(uuid.uuid4()),
        )
        self.tasks[task.task_id] = task
        self.by_request[task.request_id] = task.task_id
        task.note("user", "release")
        if not task.batches:
            task.note("assistant", "done")
            return self._state(task, "Completed", self._final(task))
        task.status = "Paused"
        task.note("assistant", "HITL intervention required.", task.batches[0])
        return self._state(task, "Paused", self.pause_body(task))

    def decide_elsewhere(self, request_id: str, action: str) -> None:
        """The owner resumed the task from the service's own UI."""
        task = self.tasks[self.by_request[request_id]]
        self._apply(task, action)

    def _state(self, task: Task, status: str, content: dict[str, Any]) -> dict[str, Any]:
        return {
            "session_id": task.session_id,
            "task_id": task.task_id,
            "request_id": task.request_id,
            "status": status,
            "content": content,
        }

    def _final(self, task: Task) -> dict[str, Any]:
        return {
            "session_id": task.session_id,
            "task_id": task.task_id,
            "request_id": task.request_id,
            "output": f"done after {len(task.decisions)} decision(s)",
            "source": f"{self.agent}:{self.version}",
            "token_usage": {"completion_tokens": 10, "prompt_tokens": 20, "total_tokens": 30},
            "extra_data": None,
        }

    def _apply(self, task: Task, action: str) -> dict[str, Any]:
        reply = self._decide(task, action)
        return reply if reply is not None else self._turn(task)

    def _decide(self, task: Task, action: str) -> dict[str, Any] | None:
        """Record the decision: the reply for a rejection, None when the approved turn is to run."""
        if task.status != "Paused":
            raise ValueError("task is not paused")
        task.decisions.append(action)
        if action == "reject":
            task.status = "Canceled"
            task.note("user", "tool execution rejected")
            return {
                "session_id": task.session_id,
                "task_id": task.task_id,
                "request_id": task.request_id,
                "message": "Tool excecution rejected.",
            }
        if action != "approve":
            raise ValueError(f"unknown action {action!r}")
        task.status = "Running"
        task.note("user", "tool execution approved")
        return None

    def _turn(self, task: Task) -> dict[str, Any]:
        """The approved tools ran, then the agent's next LLM call: another pause or the output."""
        task.step += 1
        if task.step < len(task.batches):
            task.status = "Paused"
            task.note("assistant", "HITL intervention required.", task.batches[task.step])
            return self.pause_body(task)  # same request_id, as the real service does
        final = self._final(task)
        task.note("assistant", final["output"])  # the status stays Running, as in Teal
        return final

    async def _slow_turn(self, task: Task) -> dict[str, Any]:
        await asyncio.sleep(self.resume_delay)  # the agent's LLM calls and tools take their time
        if self.fail_turns > 0:
            self.fail_turns -= 1
            raise RuntimeError("the LLM call failed")
        return self._turn(task)

    async def _invoke(self, request: Request) -> JSONResponse:
        owner = request.headers.get("authorization")
        if not owner:
            return JSONResponse({"detail": "Authentication required"}, status_code=401)
        try:
            body = await request.json()
            if not isinstance(body, dict) or not isinstance(body.get("items"), list):
                raise ValueError("items required")
        except ValueError:
            return JSONResponse(ERROR, status_code=500)
        return JSONResponse(self.start_task(owner))

    async def _resume(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
            action = body["action"]
            if not isinstance(action, str):
                raise TypeError("action must be a string")
            request_id = request.path_params["request_id"]
            task = self.tasks[self.by_request[request_id]]
            if request.headers.get("authorization") != task.owner:
                raise PermissionError("not the task's owner")
            reply = self._decide(task, action)
        except Exception:
            return JSONResponse(ERROR, status_code=500)
        if reply is not None:
            return JSONResponse(reply)
        turn = asyncio.create_task(self._slow_turn(task))  # runs to its end even if the caller is gone
        self.turns.add(turn)
        turn.add_done_callback(self.turns.discard)
        if self.drop_resumes > 0:
            self.drop_resumes -= 1
            return Dropped()
        try:
            return JSONResponse(await asyncio.shield(turn))
        except RuntimeError:
            return JSONResponse(ERROR, status_code=500)

    async def _task(self, request: Request) -> JSONResponse:
        task = self.tasks.get(request.path_params["task_id"])
        if task is None or request.headers.get("authorization") != task.owner:
            return JSONResponse({"detail": "Not Found"}, status_code=404)
        return JSONResponse(task.view())
