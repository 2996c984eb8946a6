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
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

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


class FakeTeal:
    """State and routes of the fake agent service `agent/version`."""

    def __init__(self, agent: str = "ReleaseBot", version: str = "0.1") -> None:
        self.agent = agent
        self.version = version
        self.tasks: dict[str, Task] = {}
        self.by_request: dict[str, str] = {}
        self.next_plan: list[list[dict[str, Any]]] = [[tool_call("Deploy", "ship", {"env": "prod"})]]
        prefix = f"/{agent}/{version}"
        app = Starlette(
            routes=[
                Route(prefix, self._invoke, methods=["POST"]),
                Route(prefix + RESUME_BASE + "/{request_id}", self._resume, methods=["POST"]),
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
        if not task.batches:
            task.status = "Completed"
            return self._state(task, "Completed", self._final(task))
        task.status = "Paused"
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
        if task.status != "Paused":
            raise ValueError("task is not paused")
        task.decisions.append(action)
        if action == "reject":
            task.status = "Canceled"
            return {
                "session_id": task.session_id,
                "task_id": task.task_id,
                "request_id": task.request_id,
                "message": "Tool excecution rejected.",
            }
        if action != "approve":
            raise ValueError(f"unknown action {action!r}")
        task.step += 1
        if task.step < len(task.batches):
            return self.pause_body(task)  # same request_id, as the real service does
        task.status = "Completed"
        return self._final(task)

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

    async def _resume(self, request: Request) -> JSONResponse:
        try:
            body = json.loads(await request.body())
            action = body["action"]
            if not isinstance(action, str):
                raise TypeError("action must be a string")
            request_id = request.path_params["request_id"]
            task = self.tasks[self.by_request[request_id]]
            if request.headers.get("authorization") != task.owner:
                raise PermissionError("not the task's owner")
            return JSONResponse(self._apply(task, action))
        except Exception:
            return JSONResponse(ERROR, status_code=500)
