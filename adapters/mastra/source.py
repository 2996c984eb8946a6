"""The Mastra source: polls suspended workflow runs and resumes them with people's answers.

Polling is paged (`page`/`perPage`, newest first), so a thousand waiting runs cost ten small
requests per interval, and only suspensions not seen before reach the store. Paging over a
list that changes while it is read can skip a run, so a suspension missing from a listing
is checked with the run itself before its request is withdrawn ("resumed outside the
bridge"); only runs whose suspension is really gone are withdrawn.

Write-back uses `POST …/resume-async`, which reports what Mastra refuses (run not suspended,
wrong step, resume data that does not fit the step's schema) instead of `…/resume`, which
answers 200 whatever happens. Before each attempt, and whenever a reply is missing or
unclear, the run is read (`runs.judge`): an answer is reported delivered only when the run
took it, a run that moved on fails the request with the reason, and a resume whose reply was
lost is never sent a second time.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import Field

from adapters.mastra.mapping import (
    InvalidSnapshot,
    StepInfo,
    SuspendedStep,
    answer_to_resume_data,
    resume_body,
    step_to_request,
    suspended_steps,
)
from adapters.mastra.runs import RunState, Verdict, judge, refusal
from adapters.mastra.schema import AnswerDoesNotFit, parse_schema
from adapters.polling import (
    NAME_PATTERN,
    EngineUnreadable,
    PolledEngineConfig,
    PolledEngineSource,
    describe,
    error_text,
)
from bridge.models import Request
from bridge.ports import DeliveryError, Outcome, RequestSink
from bridge.store.base import Store

log = logging.getLogger("hitl_bridge.mastra")
MAX_PAGES = 1000
CHECKS_AT_ONCE = 8


class MastraConfig(PolledEngineConfig):
    """`sources: - type: mastra` (see docs/engines/teal-mastra-agentworld.md)."""

    name: str = Field(default="mastra", pattern=NAME_PATTERN)
    workflows: list[str] = Field(default_factory=list, max_length=500)
    page_size: int = Field(default=100, ge=1, le=1000)
    resume_key: str = Field(default="answer", min_length=1, max_length=100)


@dataclass(frozen=True)
class Suspension:
    """One suspension the bridge asked about: which run, which step, since when."""

    workflow: str
    run_id: str
    step: str
    suspended_at: str
    name: str  # the whole path ("outer.inner" for a nested workflow's step)

    @classmethod
    def of(cls, ref: dict[str, Any], external_id: str | None) -> Suspension | None:
        try:
            workflow, run_id, step = str(ref["workflow"]), str(ref["run_id"]), str(ref["step"])
        except KeyError:
            return None
        when = ref.get("suspended_at")
        if not isinstance(when, str):  # stored before `suspended_at` was kept: the id ends with it
            when = (external_id or "").rsplit(":", 1)[-1]
        path = ref.get("path")
        name = ".".join(str(p) for p in path) if isinstance(path, list) and path else step
        return cls(workflow, run_id, step, when, name)


class MastraSource(PolledEngineSource):
    """Source port for Mastra workflows (PROTOCOLS §4); scopes are "wf:<workflow id>"."""

    engine_label = "Mastra"

    def __init__(self, config: MastraConfig, store: Store | None = None) -> None:
        super().__init__(config, store)
        self.config = config
        self.suspensions: dict[str, Suspension] = {}  # external id → what to check when it vanishes

    def scope_of(self, request: Request) -> str | None:
        scope = request.source_ref.get("scope")
        return scope if isinstance(scope, str) else None

    def remember(self, request: Request) -> None:
        found = Suspension.of(request.source_ref, request.external_id)
        if found is not None and request.external_id:
            self.suspensions[request.external_id] = found

    async def poll_once(self, sink: RequestSink) -> None:
        """One pass over every configured workflow; never raises for the engine."""
        self.polls += 1
        for workflow in self.config.workflows:
            await self._scan(sink, workflow)

    async def _scan(self, sink: RequestSink, workflow: str) -> None:
        scope = f"wf:{workflow}"
        try:
            found, complete = await self._list_workflow(workflow)
            new = [s for s in found if s.external_id not in self.known.get(scope, set())
                   and s.external_id not in self.unusable]
            infos = await self._step_infos(workflow) if new else {}
        except (httpx.HTTPError, EngineUnreadable) as exc:
            self.errors[scope] = describe(exc)
            log.warning("mastra source %s: cannot list %s: %s", self.name, scope, describe(exc))
            return
        self.errors.pop(scope, None)
        known = self.known.setdefault(scope, set())
        for step in new:
            try:
                request, ref = step_to_request(step, infos.get(step.name), self.config.resume_key)
            except ValueError as exc:  # pydantic's ValidationError included
                log.warning("mastra source %s: cannot show %s: %s", self.name, step.external_id, exc)
                self.unusable[step.external_id] = str(exc)
                continue
            await sink.submit(request, source=self.name, source_ref={**ref, "scope": scope})
            known.add(step.external_id)
            self.suspensions[step.external_id] = Suspension(workflow, step.run_id, step.step, step.suspended_at,
                                                            step.name)
        if not complete:
            return  # an entry could not be read: absence proves nothing this time
        vanished = sorted(known - {s.external_id for s in found})
        slots = asyncio.Semaphore(CHECKS_AT_ONCE)

        async def check(external_id: str) -> None:
            async with slots:
                if await self._gone(workflow, external_id):
                    await sink.withdraw(self.name, external_id,
                                        "resumed outside the bridge (no longer suspended in Mastra)")
                    known.discard(external_id)
                    self.suspensions.pop(external_id, None)

        await asyncio.gather(*(check(e) for e in vanished))

    async def _gone(self, workflow: str, external_id: str) -> bool:
        """Missing from a listing: is the suspension really gone? Asked of the run itself,
        since paging can skip a run that still waits. Unknown (engine error) → not gone."""
        where = self.suspensions.get(external_id) or _parse_external_id(workflow, external_id)
        if where is None:
            return True
        try:
            verdict = await self._judge(where, None)
        except DeliveryError as exc:
            log.info("mastra source %s: cannot check %s yet: %s", self.name, external_id, exc)
            return False
        return verdict.state not in (RunState.waiting, RunState.claimed)

    async def _get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        reply = await self.http.get(path, params=params)
        if reply.status_code >= 400:
            raise EngineUnreadable(f"HTTP {reply.status_code} from GET {path}: {error_text(reply)}")
        try:
            return reply.json()
        except (ValueError, RecursionError):
            raise EngineUnreadable(f"GET {path} did not answer JSON") from None

    async def _list_workflow(self, workflow: str) -> tuple[list[SuspendedStep], bool]:
        """Every waiting step of `workflow`, and whether every run in the listing was readable."""
        path = f"/api/workflows/{quote(workflow, safe='')}/runs"
        size = self.config.page_size
        out: list[SuspendedStep] = []
        complete = True
        for page in range(MAX_PAGES):
            body = await self._get_json(path, {"status": "suspended", "page": page, "perPage": size})
            runs = body.get("runs") if isinstance(body, dict) else None
            total = body.get("total") if isinstance(body, dict) else None
            if not isinstance(runs, list):
                raise EngineUnreadable(f"GET {path}: no `runs` list in the reply")
            for run in runs:
                try:
                    out.extend(suspended_steps(workflow, run))
                except InvalidSnapshot as exc:
                    log.warning("mastra source %s: skipping a run of %s: %s", self.name, workflow, exc)
                    complete = False
            fetched = (page + 1) * size
            if not runs or len(runs) < size or (isinstance(total, int) and fetched >= total):
                return out, complete
        return out, False

    async def _step_infos(self, workflow: str) -> dict[str, StepInfo]:
        """Resume schema and description per step (nested steps as "outer.inner")."""
        reply = await self.http.get(f"/api/workflows/{quote(workflow, safe='')}")
        if reply.status_code == 404:
            return {}
        if reply.status_code >= 400:
            raise EngineUnreadable(f"HTTP {reply.status_code} reading workflow {workflow}: {error_text(reply)}")
        try:
            body = reply.json()
        except (ValueError, RecursionError):
            raise EngineUnreadable(f"workflow {workflow}: not JSON") from None
        steps = body.get("allSteps") or body.get("steps") if isinstance(body, dict) else None
        infos: dict[str, StepInfo] = {}
        for key, step in (steps.items() if isinstance(steps, dict) else []):
            if isinstance(step, dict):
                text = step.get("description")
                infos[str(key)] = StepInfo(parse_schema(step.get("resumeSchema")),
                                           text.strip()[:2000] if isinstance(text, str) else "")
        return infos

    # -- writing back -------------------------------------------------------------------
    async def deliver(self, outcome: Outcome) -> None:
        """Resume the run with the answer; delivered only once the run has taken it."""
        if outcome.answer is None or outcome.state not in ("answered", "expired"):
            return  # Mastra has no way to decline a suspension: nothing to send
        ref = outcome.request.source_ref
        where = Suspension.of(ref, outcome.request.external_id) if ref.get("kind") == "workflow" else None
        if where is None:
            raise DeliveryError("the request carries no Mastra workflow reference", permanent=True)
        try:
            data = answer_to_resume_data(ref, outcome.answer, self.config.resume_key)
        except AnswerDoesNotFit as exc:
            raise DeliveryError(f"the answer does not fit step {where.step}: {exc}", permanent=True) from None
        verdict = await self._judge(where, data)
        if verdict.state is RunState.took:
            log.info("mastra source %s: run %s already has the answer to %s", self.name, where.run_id,
                     outcome.request.id)
            return
        if verdict.state is RunState.gone:
            raise DeliveryError(verdict.reason, permanent=True)
        if verdict.state is RunState.claimed:
            raise DeliveryError(f"{verdict.reason}; the answer is checked again shortly")
        await self._resume(where, resume_body(ref, data), data)

    async def _judge(self, where: Suspension, sent: Any) -> Verdict:
        path = f"/api/workflows/{quote(where.workflow, safe='')}/runs/{quote(where.run_id, safe='')}"
        try:
            reply = await self.http.get(path, params={"fields": "steps"})
        except httpx.HTTPError as exc:
            raise DeliveryError(f"cannot read the run from Mastra: {describe(exc)}") from None
        if reply.status_code == 404:
            return Verdict(RunState.gone, f"the run no longer exists in Mastra ({error_text(reply)})")
        if reply.status_code >= 400:
            raise DeliveryError(f"cannot read the run from Mastra: HTTP {reply.status_code}: {error_text(reply)}")
        try:
            return judge(reply.json(), where.step, where.suspended_at, sent, where.name)
        except (ValueError, RecursionError, InvalidSnapshot) as exc:
            raise DeliveryError(f"cannot read the run from Mastra: {str(exc)[:200]}") from None

    async def _resume(self, where: Suspension, body: dict[str, Any], sent: Any) -> None:
        path = f"/api/workflows/{quote(where.workflow, safe='')}/resume-async"
        try:
            reply = await self.http.post(path, params={"runId": where.run_id}, json=body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # nothing was sent
            raise DeliveryError(f"Mastra unreachable: {describe(exc)}") from None
        except httpx.HTTPError as exc:  # sent, but no reply (the run may be working on it)
            await self._confirm(where, sent, f"no reply to the resume call ({describe(exc)})", sent_ok=True)
            return
        if reply.status_code == 200:
            try:
                result = reply.json()
            except (ValueError, RecursionError):
                await self._confirm(where, sent, "Mastra's reply to the resume call was not JSON")
                return
            why = refusal(result)
            if why is not None:
                raise DeliveryError(f"Mastra refused the answer: {one_line(why)}", permanent=True)
            return
        if reply.status_code == 400:
            raise DeliveryError(f"Mastra refused the answer: {one_line(error_text(reply))}", permanent=True)
        if reply.status_code == 404:
            raise DeliveryError(f"the run no longer exists in Mastra ({error_text(reply)})", permanent=True)
        await self._confirm(where, sent, f"Mastra answered HTTP {reply.status_code}: {one_line(error_text(reply))}")

    async def _confirm(self, where: Suspension, sent: Any, problem: str, *, sent_ok: bool = False) -> None:
        """After an unclear or failed resume call: delivered if the run took the answer (or, when
        our call got through and is still running, is working on it); failed for good if the run
        moved on; otherwise retried."""
        try:
            verdict = await self._judge(where, sent)
        except DeliveryError as exc:
            raise DeliveryError(f"{problem}; {exc}") from None
        if verdict.state is RunState.took or (sent_ok and verdict.state is RunState.claimed):
            return
        if verdict.state is RunState.gone:
            raise DeliveryError(f"{verdict.reason} (Mastra: {problem})", permanent=True)
        raise DeliveryError(f"{problem}; the run has not taken the answer, retrying")


def one_line(text: str) -> str:
    """Mastra's messages put each problem on its own line; people see them on one."""
    return " ".join(text.split())


def _parse_external_id(workflow: str, external_id: str) -> Suspension | None:
    """`wf:<workflow>:<run>:<step path>:<suspendedAt>` → the suspension (None if it does not parse)."""
    prefix = f"wf:{workflow}:"
    if not external_id.startswith(prefix):
        return None
    run_id, _, rest = external_id[len(prefix):].partition(":")
    name, _, when = rest.rpartition(":")
    if not run_id or not name:
        return None
    return Suspension(workflow, run_id, name.split(".")[0], when, name)
