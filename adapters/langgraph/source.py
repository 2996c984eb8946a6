"""The `langgraph` source: polls a LangGraph server for interrupted threads and resumes them.

Each pending `interrupt()` (thread id + interrupt id) becomes one bridge request; the
answer goes back as `POST /threads/{id}/runs` with `command.resume`. A thread interrupted
again after the resume has a new interrupt id, so it becomes a new request. An interrupt
that disappears while its request is open (resumed from LangGraph Studio, thread deleted)
withdraws the request. Polling lists only thread ids and timestamps, page by page, and
fetches details only for threads that changed since the last poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from starlette.routing import BaseRoute

from adapters.langgraph.client import LangGraphClient, LangGraphError, ThreadInfo
from adapters.langgraph.mapping import map_interrupt, safe_context_value
from adapters.langgraph.resume import ResumeError, ResumePlan, resume_value
from bridge.config_daemon import Duration
from bridge.models import OPEN_STATES, RequestIn
from bridge.ports import DeliveryError, Outcome, RequestSink
from bridge.questions import Question, QuestionKind
from bridge.registry import AdapterContext
from bridge.store.base import Store
from bridge.store.query import RequestQuery

log = logging.getLogger(__name__)

RUN_METADATA_KEY = "hitl_bridge_request_id"
#: the resume run's metadata key holding the signed receipt of the decision (docs/guides/audits.md)
RECEIPT_METADATA_KEY = "hitl_bridge_receipt"


class LangGraphConfig(BaseModel):
    """The `sources: - type: langgraph` section (see docs/engines/langgraph.md)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="langgraph", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    base_url: str = Field(pattern=r"^https?://", max_length=2000)
    api_key: SecretStr | None = None  # LangGraph Platform / LangSmith key, sent as X-Api-Key
    api_key_env: str | None = None  # or: the name of the env var that holds it
    api_key_header: str = "X-Api-Key"
    headers: dict[str, SecretStr] = Field(default_factory=dict)  # e.g. Authorization: Bearer ${T}
    poll_every: Duration = timedelta(seconds=5)
    page_size: int = Field(default=100, ge=1, le=1000)
    max_threads: int = Field(default=10_000, ge=1)
    metadata: dict[str, Any] = Field(default_factory=dict)  # only threads whose metadata matches
    assistant_id: str | None = None  # resume with this assistant instead of the thread's own
    timeout: Duration = timedelta(seconds=5)


def build_source(section: dict[str, Any], ctx: AdapterContext) -> LangGraphSource:
    """Registry factory for `type: langgraph`."""
    config = ctx.parse(LangGraphConfig, section)
    headers = {name: value.get_secret_value() for name, value in config.headers.items()}
    key = config.api_key.get_secret_value() if config.api_key is not None else ""
    if config.api_key_env:
        key = os.environ.get(config.api_key_env, "")
        if not key:
            raise ctx.error("api_key_env", f"environment variable {config.api_key_env} is not set")
    if key:
        headers[config.api_key_header] = key
    return LangGraphSource(config, headers=headers, store=ctx.store)


class LangGraphSource:
    """Polls one LangGraph server; see the module docstring for the contract."""

    def __init__(
        self,
        config: LangGraphConfig,
        *,
        headers: dict[str, str] | None = None,
        store: Store | None = None,
        client: LangGraphClient | None = None,
    ) -> None:
        self.name = config.name
        self.config = config
        self.store = store
        self.client = client or LangGraphClient(
            config.base_url, headers=headers, timeout_s=config.timeout.total_seconds()
        )
        self.last_error: str | None = None
        self.scans = 0
        self._seen: dict[str, str] = {}  # thread id → state_updated_at at the last poll
        self._known: dict[str, set[str]] = {}  # thread id → interrupt ids we hold requests for
        self._seeded = False

    @property
    def problems(self) -> dict[str, str]:
        """Why the last poll failed, while it keeps failing."""
        return {"poll": self.last_error} if self.last_error else {}

    # -- polling ---------------------------------------------------------------------------

    async def run(self, sink: RequestSink) -> None:
        """Poll until cancelled. An unreachable or misbehaving server is logged and retried
        at the next interval; it never stops the source."""
        interval = self.config.poll_every.total_seconds()
        while True:
            try:
                await self.scan(sink)
            except LangGraphError as exc:
                if str(exc) != self.last_error:
                    log.warning("langgraph source %s: poll failed: %s", self.name, exc)
                self.last_error = str(exc)
            await asyncio.sleep(interval)

    async def scan(self, sink: RequestSink) -> int:
        """One poll: submit new interrupts, withdraw vanished ones. Returns how many
        requests were created. Raises LangGraphError when the server misbehaves (nothing
        is withdrawn on a failed poll)."""
        if not self._seeded:
            await self._seed_from_store()
        listing = await self.client.list_interrupted(
            page_size=self.config.page_size,
            max_threads=self.config.max_threads,
            metadata=self.config.metadata or None,
        )
        if len(listing) >= self.config.max_threads and self.scans == 0:
            log.warning("langgraph source %s: %d or more interrupted threads; only the first %d "
                        "are picked up (raise max_threads or narrow with metadata)",
                        self.name, len(listing), self.config.max_threads)
        changed = [t for t, stamp in listing.items() if self._seen.get(t) != stamp]
        # Threads we hold requests for that the listing no longer shows: look them up one
        # by one rather than trust paging (a thread leaving mid-listing shifts the pages).
        missing = [t for t in self._known if t not in listing]
        infos = await self.client.threads(changed + missing)
        by_id = {info.thread_id: info for info in infos}
        created = 0
        for thread_id in changed + missing:
            info = by_id.get(thread_id)
            created += await self._reconcile(sink, thread_id, info)
        self._seen = {t: s for t, s in listing.items() if t in by_id or t not in changed}
        self.last_error = None
        self.scans += 1
        return created

    async def _reconcile(self, sink: RequestSink, thread_id: str, info: ThreadInfo | None) -> int:
        if info is not None and info.status in ("busy", "pending"):
            # Running right now (a resume of one of several interrupts, or a run started
            # elsewhere): its interrupts are not listed while it runs. Decide next poll.
            return 0
        pending = {i.id: i.value for i in info.interrupts} if info is not None and info.waiting else {}
        for interrupt_id in sorted(self._known.get(thread_id, set()) - set(pending)):
            why = "the thread was deleted" if info is None else (
                "the thread's run failed" if info.status == "error"
                else "the thread was resumed outside the bridge")
            await sink.withdraw(self.name, f"{thread_id}:{interrupt_id}", why)
        created = 0
        if info is not None:
            for interrupt_id, value in pending.items():
                submission = self._submission(info, interrupt_id, value)
                if submission is None:
                    continue
                request, source_ref = submission
                _, new = await sink.submit(request, source=self.name, source_ref=source_ref)
                created += int(new)
        if pending:
            self._known[thread_id] = set(pending)
        else:
            self._known.pop(thread_id, None)
        return created

    async def _seed_from_store(self) -> None:
        """After a restart, remember the open requests of this source, so that interrupts
        resolved while the bridge was down are withdrawn at the first poll."""
        self._seeded = True
        if self.store is None:
            return
        async for page in self.store.pages(RequestQuery(states=tuple(OPEN_STATES), source=self.name)):
            for request in page:
                ref = request.source_ref
                thread_id, interrupt_id = ref.get("thread_id"), ref.get("interrupt_id")
                if isinstance(thread_id, str) and isinstance(interrupt_id, str):
                    self._known.setdefault(thread_id, set()).add(interrupt_id)

    def _submission(
        self, info: ThreadInfo, interrupt_id: str, value: Any
    ) -> tuple[RequestIn, dict[str, Any]] | None:
        """The request for one pending interrupt and the reference `deliver` needs."""
        mapping = map_interrupt(value)
        graph_id = _short_str(info.metadata.get("graph_id"), 500)
        assistant = (self.config.assistant_id
                     or _short_str(info.metadata.get("assistant_id"), 200) or graph_id)
        source_ref = {
            "thread_id": info.thread_id,
            "interrupt_id": interrupt_id,
            "assistant_id": assistant,
            "plan": mapping.plan.to_json(),
        }
        base: dict[str, Any] = {
            "external_id": f"{info.thread_id}:{interrupt_id}",
            "engine": "langgraph",
            "run_id": info.thread_id[:200],
            "agent": graph_id,
            "tool": mapping.tool,
            "context": {
                "server": self.config.base_url,
                "thread_id": info.thread_id,
                "graph_id": graph_id,
                "interrupt_id": interrupt_id,
                "interrupt": safe_context_value(value),
            },
            "labels": _labels(info.metadata),
        }
        try:
            return RequestIn(title=mapping.title, description=mapping.description,
                             questions=mapping.questions, **base), source_ref
        except ValidationError as exc:
            # A value shape we map but the model refuses (odd sizes...): ask as plain text.
            log.warning("langgraph source %s: thread %s interrupt %s shown as text: %s",
                        self.name, info.thread_id, interrupt_id, exc.errors()[0]["msg"])
        try:
            request = RequestIn(
                title="LangGraph interrupt",
                questions=[Question(id="answer", kind=QuestionKind.text,
                                    prompt="The graph is waiting for your input (see context).")],
                **base,
            )
        except ValidationError as exc:
            log.warning("langgraph source %s: thread %s interrupt %s skipped: %s",
                        self.name, info.thread_id, interrupt_id, exc.errors()[0]["msg"])
            return None
        return request, {**source_ref, "plan": ResumePlan(shape="plain").to_json()}

    # -- write-back ------------------------------------------------------------------------

    async def deliver(self, outcome: Outcome) -> None:
        """Resume the thread with the answer. Outcomes without an answer (cancelled, expired
        with no default) write nothing: the thread keeps waiting in LangGraph."""
        answer = outcome.answer
        if answer is None:
            return
        request = outcome.request
        ref = request.source_ref
        thread_id, interrupt_id = ref.get("thread_id"), ref.get("interrupt_id")
        if not isinstance(thread_id, str) or not isinstance(interrupt_id, str):
            raise DeliveryError("request has no LangGraph thread/interrupt reference", permanent=True)
        try:
            plan = ResumePlan.from_json(ref.get("plan") or {})
            value = resume_value(plan, answer.values, answer.reason)
        except ResumeError as exc:
            raise DeliveryError(f"cannot build the resume value: {exc}", permanent=True) from None
        where = f"LangGraph {self.config.base_url} thread {thread_id}"
        try:
            info = await self.client.thread(thread_id)
            if info is None:
                raise DeliveryError(f"{where}: the thread no longer exists", permanent=True)
            if info.status in ("busy", "pending"):
                raise DeliveryError(f"{where}: the thread is running; resuming after its run ends")
            # An earlier attempt whose reply was lost may have landed: never resume twice.
            if await self._already_resumed(thread_id, request.id):
                return
            if not info.pending(interrupt_id):
                raise DeliveryError(
                    f"{where}: no longer waits for interrupt {interrupt_id} "
                    "(resumed outside the bridge)", permanent=True)
            assistant = ref.get("assistant_id") or self.config.assistant_id
            if not isinstance(assistant, str) or not assistant:
                raise DeliveryError(f"{where}: no assistant id to resume with; set "
                                    "`assistant_id` in the source config", permanent=True)
            await self.client.resume(
                thread_id, interrupt_id=interrupt_id, value=value, assistant_id=assistant,
                metadata={RUN_METADATA_KEY: request.id,
                          "hitl_bridge_answered_by": answer.responder.key,
                          **({RECEIPT_METADATA_KEY: outcome.receipt} if outcome.receipt else {})},
            )
        except LangGraphError as exc:
            raise DeliveryError(f"{where}: {exc}", permanent=exc.status == 404) from None

    async def _already_resumed(self, thread_id: str, request_id: str) -> bool:
        """True when a run carrying this request's id exists: an earlier attempt landed
        even though its reply was lost."""
        for run in await self.client.recent_runs(thread_id):
            metadata = run.get("metadata")
            if isinstance(metadata, dict) and metadata.get(RUN_METADATA_KEY) == request_id:
                return True
        return False

    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        return []

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.aclose()


def _short_str(value: Any, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def _labels(metadata: dict[str, Any]) -> dict[str, str]:
    """Thread metadata with plain string values, as route-matchable labels."""
    labels: dict[str, str] = {}
    for key, value in metadata.items():
        if len(labels) >= 40:
            break
        if isinstance(key, str) and 0 < len(key) <= 100 and isinstance(value, str | int | bool):
            labels[key] = str(value)[:500]
    return labels
