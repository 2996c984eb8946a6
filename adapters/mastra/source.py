"""The Mastra source: polls suspended workflow runs and waiting inbox tasks, resumes them.

Polling is paged (`page`/`perPage`), so a thousand waiting runs cost ten small requests per
interval, and only runs not seen before reach the store. A run or task that disappears
from a complete listing while its request is still open was resumed elsewhere (Mastra's
playground, another client): its request is withdrawn and its chat messages updated.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal
from urllib.parse import quote

import httpx
from pydantic import Field

from adapters.mastra.mapping import (
    InvalidSnapshot,
    Shape,
    SuspendedStep,
    WaitingTask,
    answer_value,
    step_to_request,
    suspended_steps,
    task_to_request,
    waiting_task,
    workflow_resume_body,
)
from adapters.polling import (
    NAME_PATTERN,
    EngineUnreadable,
    PolledEngineConfig,
    PolledEngineSource,
    describe,
    error_text,
)
from bridge.models import Request, RequestIn
from bridge.ports import DeliveryError, Outcome, RequestSink
from bridge.store.base import Store

log = logging.getLogger("hitl_bridge.mastra")
MAX_PAGES = 1000


class MastraConfig(PolledEngineConfig):
    """`sources: - type: mastra` (see docs/readme/engines.md)."""

    name: str = Field(default="mastra", pattern=NAME_PATTERN)
    workflows: list[str] = Field(default_factory=list)
    inboxes: list[str] = Field(default_factory=list)
    page_size: int = Field(default=100, ge=1, le=1000)
    resume_key: str = Field(default="answer", min_length=1, max_length=100)


class MastraSource(PolledEngineSource):
    """Source port for Mastra (PROTOCOLS §4); scopes are "wf:<id>" and "inbox:<id>"."""

    engine_label = "Mastra"

    def __init__(self, config: MastraConfig, store: Store | None = None) -> None:
        super().__init__(config, store)
        self.config = config

    def scope_of(self, request: Request) -> str | None:
        scope = request.source_ref.get("scope")
        return scope if isinstance(scope, str) else None

    async def poll_once(self, sink: RequestSink) -> None:
        """One pass over every configured workflow and inbox; never raises for the engine."""
        self.polls += 1
        for workflow in self.config.workflows:
            await self._scan(sink, f"wf:{workflow}", self._list_workflow(workflow))
        for inbox in self.config.inboxes:
            await self._scan(sink, f"inbox:{inbox}", self._list_inbox(inbox))

    async def _scan(self, sink: RequestSink, scope: str, listing: Any) -> None:
        try:
            found, complete = await listing
        except (httpx.HTTPError, EngineUnreadable) as exc:
            self.errors[scope] = describe(exc)
            log.warning("mastra source %s: cannot list %s: %s", self.name, scope, describe(exc))
            return
        self.errors.pop(scope, None)
        seen = {item.external_id for item in found}
        known = self.known.setdefault(scope, set())
        for item in found:
            if item.external_id in known or item.external_id in self.unusable:
                continue  # already a request (or already reported): no mapping, no store access
            try:
                request, ref = item.build()
            except ValueError as exc:  # pydantic's ValidationError included
                log.warning("mastra source %s: cannot show %s: %s", self.name, item.external_id, exc)
                self.unusable[item.external_id] = str(exc)
                continue
            await sink.submit(request, source=self.name, source_ref={**ref, "scope": scope})
            known.add(item.external_id)
        if not complete:
            return  # an entry could not be read: absence proves nothing this time
        for gone in sorted(known - seen):
            await sink.withdraw(self.name, gone, "resumed outside the bridge (no longer suspended in Mastra)")
            known.discard(gone)

    async def _get_json(self, path: str, params: dict[str, Any]) -> Any:
        reply = await self.http.get(path, params=params)
        if reply.status_code >= 400:
            raise EngineUnreadable(f"HTTP {reply.status_code} from GET {path}: {error_text(reply)}")
        try:
            return reply.json()
        except (ValueError, RecursionError):
            raise EngineUnreadable(f"GET {path} did not answer JSON") from None

    async def _list_workflow(self, workflow: str) -> tuple[list[Found], bool]:
        """Every waiting step of `workflow`, and whether every run in the listing was readable."""
        path = f"/api/workflows/{quote(workflow, safe='')}/runs"
        size = self.config.page_size
        out: list[Found] = []
        complete = True
        for page in range(MAX_PAGES):
            body = await self._get_json(path, {"status": "suspended", "page": page, "perPage": size})
            runs = body.get("runs") if isinstance(body, dict) else None
            total = body.get("total") if isinstance(body, dict) else None
            if not isinstance(runs, list):
                raise EngineUnreadable(f"GET {path}: no `runs` list in the reply")
            for run in runs:
                try:
                    steps = suspended_steps(workflow, run)
                except InvalidSnapshot as exc:
                    log.warning("mastra source %s: skipping a run of %s: %s", self.name, workflow, exc)
                    complete = False
                    continue
                out.extend(Found(step.external_id[:200], partial(_workflow_item, step)) for step in steps)
            fetched = (page + 1) * size
            if not runs or len(runs) < size or (isinstance(total, int) and fetched >= total):
                return out, complete
        return out, False

    async def _list_inbox(self, inbox: str) -> tuple[list[Found], bool]:
        path = f"/api/inboxes/{quote(inbox, safe='')}/tasks"
        size = self.config.page_size
        out: list[Found] = []
        complete = True
        for page in range(MAX_PAGES):
            body = await self._get_json(path, {"status": "waiting_for_input", "page": page, "perPage": size})
            tasks = body.get("tasks") if isinstance(body, dict) else None
            if not isinstance(tasks, list):
                raise EngineUnreadable(f"GET {path}: no `tasks` list in the reply")
            for raw in tasks:
                try:
                    task = waiting_task(inbox, raw)
                except InvalidSnapshot as exc:
                    log.warning("mastra source %s: skipping a task of %s: %s", self.name, inbox, exc)
                    complete = False
                    continue
                if task is not None:
                    out.append(Found(task.external_id[:200], partial(_task_item, task)))
            paging = body.get("pagination") if isinstance(body, dict) else None
            more = isinstance(paging, dict) and paging.get("hasMore") is True
            if not tasks or not more:
                return out, complete
        return out, False

    # -- writing back -------------------------------------------------------------------
    async def deliver(self, outcome: Outcome) -> None:
        """Resume the run/task with the answer. Nothing to send without an answer."""
        if outcome.answer is None or outcome.state not in ("answered", "expired"):
            return
        ref = outcome.request.source_ref
        value = answer_value(ref.get("shape", "text"), ref.get("options") or {}, outcome.answer)
        if ref.get("kind") == "workflow":
            path = f"/api/workflows/{quote(ref['workflow'], safe='')}/resume"
            params = {"runId": ref["run_id"]}
            body = workflow_resume_body(ref["step"], ref.get("shape", "text"), value, self.config.resume_key)
        elif ref.get("kind") == "inbox":
            path = f"/api/inboxes/{quote(ref['inbox'], safe='')}/tasks/{quote(ref['task_id'], safe='')}/resume"
            params, body = {}, {"payload": value}
        else:
            raise DeliveryError("the request carries no Mastra reference", permanent=True)
        rid = outcome.request.id
        if rid in self.ambiguous and not await self._still_waiting(ref, outcome.request.external_id or ""):
            # the earlier attempt got no clear reply and the step no longer waits: it landed.
            # (Resuming again could answer a new suspension of the same step.)
            self.ambiguous.discard(rid)
            return
        await self._post_resume(rid, path, params, body)

    async def _still_waiting(self, ref: dict[str, Any], external_id: str) -> bool:
        """Is this exact suspension (step + suspendedAt) still listed by the engine?"""
        try:
            if ref.get("kind") == "workflow":
                found, _ = await self._list_workflow(ref["workflow"])
            else:
                found, _ = await self._list_inbox(ref["inbox"])
        except (httpx.HTTPError, EngineUnreadable) as exc:
            raise DeliveryError(f"cannot check whether Mastra still waits: {describe(exc)}") from None
        return any(item.external_id == external_id for item in found)

    async def _post_resume(self, request_id: str, path: str, params: dict[str, str], body: dict[str, Any]) -> None:
        """POST the resume. Until a clear reply comes back the attempt counts as unclear
        (`ambiguous`), also when the outbox cuts it off, so a retry checks first."""
        was_unclear = request_id in self.ambiguous
        self.ambiguous.add(request_id)
        reply = await self.post_write_back(request_id, path, body, was_unclear, params)
        if reply.status_code in (400, 404, 409):
            self.ambiguous.discard(request_id)
            if was_unclear:
                # an earlier attempt got no clear reply and the run no longer waits: it landed
                log.info("mastra source %s: %s already resumed by an earlier attempt", self.name, request_id)
                return
            raise DeliveryError(
                f"Mastra refused the resume (HTTP {reply.status_code}: {error_text(reply)}); "
                "the run no longer waits for this answer (resumed elsewhere?)",
                permanent=True,
            )
        if reply.status_code >= 300:
            if not was_unclear:
                self.ambiguous.discard(request_id)
            raise DeliveryError(f"Mastra answered HTTP {reply.status_code}: {error_text(reply)}")
        try:
            reply.json()
        except (ValueError, RecursionError):
            raise DeliveryError(f"Mastra answered POST {path} with something that is not JSON") from None
        self.ambiguous.discard(request_id)


@dataclass(frozen=True)
class Found:
    """One waiting step or task in a listing; `build` maps it only when it is new."""

    external_id: str
    build: Callable[[], tuple[RequestIn, dict[str, Any]]]


def _workflow_item(step: SuspendedStep) -> tuple[RequestIn, dict[str, Any]]:
    request, shape = step_to_request(step)
    return request, _ref("workflow", shape, workflow=step.workflow, run_id=step.run_id, step=step.step)


def _task_item(task: WaitingTask) -> tuple[RequestIn, dict[str, Any]]:
    request, shape = task_to_request(task)
    return request, _ref("inbox", shape, inbox=task.inbox, task_id=task.task_id)


def _ref(kind: Literal["workflow", "inbox"], shape: Shape, **ids: str) -> dict[str, Any]:
    ref: dict[str, Any] = {"kind": kind, "shape": str(shape.kind), **ids}
    if shape.options:
        ref["options"] = shape.options
    return ref
