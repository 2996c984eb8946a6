"""A Mastra server's workflow-run and inbox-task routes, as PROTOCOLS.md §4 describes them.

Workflows: `GET /api/workflows/{id}/runs` (filters `status`, paging `page`/`perPage` from
page 0, or `offset`/`limit`) answers `{runs: [{workflowName, runId, snapshot, createdAt,
updatedAt, resourceId}], total}`; a suspended run's snapshot names the step in
`suspendedPaths` and carries `context[step].suspendPayload`. `POST
/api/workflows/{id}/resume?runId=…` with `{step, resumeData}` answers `{message}`.

Inbox tasks: `GET /api/inboxes/{id}/tasks?status=waiting_for_input&page&perPage` answers
`{tasks, pagination: {total, page, perPage, hasMore}}`; `POST
/api/inboxes/{id}/tasks/{taskId}/resume` with `{payload}` answers `{success: true}`.

Errors are `{error: message}` with 400 (bad input, not suspended) or 404 (unknown).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.engines.harness import FakeServer


def _now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


def _iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class Run:
    workflow: str
    run_id: str
    status: str = "running"
    context: dict[str, Any] = field(default_factory=dict)
    suspended_paths: dict[str, list[int]] = field(default_factory=dict)
    created_at: str = field(default_factory=_iso)
    updated_at: str = field(default_factory=_iso)
    resumes: list[dict[str, Any]] = field(default_factory=list)
    # what each resume does next: None → success; (step, payload) → suspend again
    then: list[tuple[str, dict[str, Any]] | None] = field(default_factory=list)


@dataclass
class Task:
    inbox: str
    task_id: str
    status: str
    suspend_payload: dict[str, Any] | None
    title: str = ""
    suspended_at: str = field(default_factory=_iso)
    resume_payloads: list[Any] = field(default_factory=list)


class FakeMastra:
    """State and routes of the fake Mastra server."""

    def __init__(self) -> None:
        self.runs: dict[str, dict[str, Run]] = {}
        self.tasks: dict[str, dict[str, Task]] = {}
        self.snapshot_as_string = False  # some storage adapters return the snapshot as JSON text
        app = Starlette(
            routes=[
                Route("/api/workflows/{wid}/runs", self._list_runs, methods=["GET"]),
                Route("/api/workflows/{wid}/resume", self._resume_run, methods=["POST"]),
                Route("/api/inboxes/{iid}/tasks", self._list_tasks, methods=["GET"]),
                Route("/api/inboxes/{iid}/tasks/{tid}/resume", self._resume_task, methods=["POST"]),
            ]
        )
        self.server = FakeServer(app)

    @property
    def url(self) -> str:
        return self.server.url

    # -- engine side: what a workflow step does ------------------------------------------
    def add_workflow(self, workflow: str) -> None:
        self.runs.setdefault(workflow, {})

    def suspend(
        self,
        workflow: str,
        step: str,
        payload: dict[str, Any],
        run_id: str | None = None,
        then: list[tuple[str, dict[str, Any]] | None] | None = None,
    ) -> str:
        """A run whose `step` called `suspend(payload)`; returns its runId."""
        runs = self.runs.setdefault(workflow, {})
        run = runs.get(run_id or "") or Run(workflow, run_id or str(uuid.uuid4()))
        runs[run.run_id] = run
        if then is not None:
            run.then = list(then)
        self._suspend_step(run, step, payload)
        return run.run_id

    def _suspend_step(self, run: Run, step: str, payload: dict[str, Any]) -> None:
        run.status = "suspended"
        run.context[step] = {
            "status": "suspended",
            "payload": {},
            "suspendPayload": payload,
            "startedAt": _now_ms(),
            "suspendedAt": _now_ms(),
        }
        run.suspended_paths = {step: [len(run.context)]}
        run.updated_at = _iso()

    def finish_elsewhere(self, workflow: str, run_id: str) -> None:
        """Someone resumed the run from Mastra's own playground."""
        run = self.runs[workflow][run_id]
        run.status = "success"
        run.suspended_paths = {}

    def add_task(self, inbox: str, payload: dict[str, Any] | None, title: str = "") -> str:
        task = Task(inbox, str(uuid.uuid4()), "waiting_for_input", payload, title)
        self.tasks.setdefault(inbox, {})[task.task_id] = task
        return task.task_id

    # -- HTTP ----------------------------------------------------------------------------
    def snapshot(self, run: Run) -> dict[str, Any] | str:
        snap = {
            "runId": run.run_id,
            "status": run.status,
            "value": {},
            "context": {"input": {}, **run.context},
            "activePaths": [],
            "suspendedPaths": run.suspended_paths,
            "serializedStepGraph": [],
            "timestamp": _now_ms(),
        }
        return json.dumps(snap) if self.snapshot_as_string else snap

    def run_json(self, run: Run) -> dict[str, Any]:
        return {
            "workflowName": run.workflow,
            "runId": run.run_id,
            "snapshot": self.snapshot(run),
            "createdAt": run.created_at,
            "updatedAt": run.updated_at,
            "resourceId": None,
        }

    async def _list_runs(self, request: Request) -> JSONResponse:
        wid = request.path_params["wid"]
        if wid not in self.runs:
            return JSONResponse({"error": "Workflow not found"}, status_code=404)
        q = request.query_params
        runs = [r for r in self.runs[wid].values() if q.get("status") in (None, r.status)]
        runs.sort(key=lambda r: r.created_at, reverse=True)
        try:
            start, size = _paging(q)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        page = runs[start : start + size] if size else runs[start:]
        return JSONResponse({"runs": [self.run_json(r) for r in page], "total": len(runs)})

    async def _resume_run(self, request: Request) -> JSONResponse:
        wid = request.path_params["wid"]
        run_id = request.query_params.get("runId")
        if not run_id:
            return JSONResponse({"error": "runId required to resume workflow"}, status_code=400)
        run = self.runs.get(wid, {}).get(run_id)
        if run is None:
            return JSONResponse({"error": "Workflow run not found"}, status_code=404)
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"error": "Invalid JSON body"}, status_code=400)
        if run.status != "suspended":
            return JSONResponse({"error": "This workflow run was not suspended"}, status_code=400)
        step = body.get("step") if isinstance(body, dict) else None
        steps = [step] if isinstance(step, str) else step
        if not isinstance(steps, list) or steps[0] not in run.suspended_paths:
            return JSONResponse({"error": f"This workflow step {step!r} was not suspended"}, status_code=400)
        run.resumes.append(body)
        run.context[steps[0]]["status"] = "success"
        run.context[steps[0]]["resumePayload"] = body.get("resumeData")
        nxt = run.then.pop(0) if run.then else None
        if nxt is None:
            run.status = "success"
            run.suspended_paths = {}
        else:
            self._suspend_step(run, nxt[0], nxt[1])
        run.updated_at = _iso()
        return JSONResponse({"message": "Workflow run resumed"})

    async def _list_tasks(self, request: Request) -> JSONResponse:
        iid = request.path_params["iid"]
        q = request.query_params
        wanted = q.getlist("status")
        tasks = [t for t in self.tasks.get(iid, {}).values() if not wanted or t.status in wanted]
        try:
            page = int(q.get("page", "0"))
            per_page = int(q.get("perPage", "100"))
        except ValueError:
            return JSONResponse({"error": "page and perPage must be numbers"}, status_code=400)
        chunk = tasks[page * per_page : (page + 1) * per_page]
        return JSONResponse(
            {
                "tasks": [self.task_json(t) for t in chunk],
                "pagination": {
                    "total": len(tasks),
                    "page": page,
                    "perPage": per_page,
                    "hasMore": (page + 1) * per_page < len(tasks),
                },
            }
        )

    def task_json(self, t: Task) -> dict[str, Any]:
        return {
            "id": t.task_id,
            "inboxId": t.inbox,
            "type": "review",
            "status": t.status,
            "priority": 1,
            "title": t.title or None,
            "payload": {"input": "…"},
            "createdAt": t.suspended_at,
            "attempts": 1,
            "maxAttempts": 3,
            "suspendedAt": t.suspended_at,
            "suspendPayload": t.suspend_payload,
        }

    async def _resume_task(self, request: Request) -> JSONResponse:
        task = self.tasks.get(request.path_params["iid"], {}).get(request.path_params["tid"])
        if task is None:
            return JSONResponse({"error": "Task not found"}, status_code=404)
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"error": "Invalid JSON body"}, status_code=400)
        if not isinstance(body, dict) or "payload" not in body:
            return JSONResponse({"error": "payload is required"}, status_code=400)
        if task.status != "waiting_for_input":
            return JSONResponse({"error": f"Task is not waiting for input ({task.status})"}, status_code=400)
        task.resume_payloads.append(body["payload"])
        task.status = "in_progress"
        return JSONResponse({"success": True})


def _paging(q: Any) -> tuple[int, int]:
    """page/perPage (page from 0) or offset/limit, as Mastra's combined schema accepts."""
    if "page" in q or "perPage" in q:
        page, per_page = int(q.get("page", "0")), int(q.get("perPage", "0"))
        return page * per_page, per_page
    return int(q.get("offset", "0")), int(q.get("limit", "0"))
