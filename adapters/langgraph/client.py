"""The few LangGraph server calls the bridge makes, over httpx, with every reply checked.

Only `/threads/search` (listing and targeted look-ups), `/threads/{id}/runs` (resume) and
`GET /threads/{id}/runs` (did our resume already land?) are used. Any reply that is not
what the LangGraph API documents raises `LangGraphError`; nothing here logs headers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

MAX_REPLY_BYTES = 16 * 1024 * 1024
# langgraph's own config key (langgraph.pregel.remote sends it too): refuse a resume whose
# interrupt id is not pending instead of falling back to the task's next interrupt.
STRICT_RESUME_KEY = "__pregel_strict_resume"
# Interrupt ids a resume map accepts (xxh3-128 hex digests); older servers used other ids
# and only understand a bare resume value.
_INTERRUPT_ID = re.compile(r"[0-9a-f]{32}")
THREAD_FIELDS = ["thread_id", "status", "state_updated_at", "metadata", "interrupts"]


class LangGraphError(Exception):
    """A call to the LangGraph server failed: unreachable, timed out, HTTP error, or garbage.

    `status` is the HTTP status when there was one.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class PendingInterrupt:
    """One `interrupt()` a thread waits on."""

    id: str
    value: Any


@dataclass(frozen=True)
class ThreadInfo:
    """What the bridge needs to know about one thread."""

    thread_id: str
    status: str
    state_updated_at: str
    metadata: dict[str, Any] = field(default_factory=dict)
    interrupts: tuple[PendingInterrupt, ...] = ()

    @property
    def waiting(self) -> bool:
        """Waits for a resume. `error` counts when interrupts are still pending: a resume
        refused by LangGraph (strict resume, stale interrupt id) leaves the thread so."""
        return self.status == "interrupted" or (self.status == "error" and bool(self.interrupts))

    def pending(self, interrupt_id: str) -> bool:
        return self.waiting and any(i.id == interrupt_id for i in self.interrupts)


class LangGraphClient:
    """An async client for one LangGraph server (`langgraph dev`, LangGraph Platform...)."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=dict(headers or {}),
            timeout=timeout_s,
            transport=transport,
            follow_redirects=False,
        )

    @property
    def http(self) -> httpx.AsyncClient:
        """The HTTP client (its base URL is the server's): `doctor` checks reachability with it."""
        return self._http

    async def aclose(self) -> None:
        await self._http.aclose()

    async def list_interrupted(
        self, *, page_size: int, max_threads: int, metadata: Mapping[str, Any] | None = None
    ) -> dict[str, str]:
        """Every interrupted thread as `{thread_id: state_updated_at}`, page by page.

        Selects only those two fields, so listing a thousand waiting threads costs a few
        dozen kilobytes; callers fetch details only for threads that changed.
        """
        found: dict[str, str] = {}
        offset = 0
        while offset < max_threads:
            body: dict[str, Any] = {
                "status": "interrupted",
                "limit": page_size,
                "offset": offset,
                "sort_by": "thread_id",
                "sort_order": "asc",
                "select": ["thread_id", "state_updated_at"],
            }
            if metadata:
                body["metadata"] = dict(metadata)
            page = await self._search(body)
            for item in page:
                thread_id = item.get("thread_id")
                if not isinstance(thread_id, str) or not thread_id:
                    raise LangGraphError("threads/search returned an item without thread_id")
                found[thread_id] = str(item.get("state_updated_at") or "")
            if len(page) < page_size:
                break
            offset += page_size
        return found

    async def threads(self, thread_ids: Sequence[str]) -> list[ThreadInfo]:
        """Details (status, metadata, pending interrupts) of the given threads; threads
        that no longer exist are simply missing from the result."""
        out: list[ThreadInfo] = []
        ids = list(thread_ids)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            body = {"ids": chunk, "limit": len(chunk), "select": THREAD_FIELDS}
            out.extend(_thread_info(item) for item in await self._search(body))
        return out

    async def thread(self, thread_id: str) -> ThreadInfo | None:
        found = await self.threads([thread_id])
        return found[0] if found else None

    async def resume(
        self,
        thread_id: str,
        *,
        interrupt_id: str,
        value: Any,
        assistant_id: str,
        metadata: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Start a run that answers exactly one interrupt with `value`.

        The resume is addressed by interrupt id and marked strict, so a resume that arrives
        late (after the thread moved on to another question) is refused by LangGraph instead
        of answering the wrong question. A busy thread is refused (409) instead of queued.
        """
        addressed = _INTERRUPT_ID.fullmatch(interrupt_id) is not None
        body: dict[str, Any] = {
            "assistant_id": assistant_id,
            "command": {"resume": {interrupt_id: value} if addressed else value},
            "metadata": dict(metadata),
            "multitask_strategy": "reject",
        }
        if addressed:
            body["config"] = {"configurable": {STRICT_RESUME_KEY: True}}
        reply = await self._call("POST", f"/threads/{thread_id}/runs", body)
        if not isinstance(reply, dict) or "run_id" not in reply:
            raise LangGraphError("the resume call did not return a run")
        return reply

    async def recent_runs(self, thread_id: str, limit: int = 20) -> list[dict[str, Any]]:
        reply = await self._call("GET", f"/threads/{thread_id}/runs", None, {"limit": limit})
        if not isinstance(reply, list):
            raise LangGraphError("listing runs did not return a list")
        return [r for r in reply if isinstance(r, dict)]

    async def _search(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        reply = await self._call("POST", "/threads/search", body)
        if not isinstance(reply, list) or not all(isinstance(x, dict) for x in reply):
            raise LangGraphError("threads/search did not return a list of threads")
        return reply

    async def _call(
        self, method: str, path: str, body: Any, params: dict[str, Any] | None = None
    ) -> Any:
        try:
            async with self._http.stream(method, path, json=body, params=params) as response:
                raw = bytearray()
                async for chunk in response.aiter_bytes():
                    raw.extend(chunk)
                    if len(raw) > MAX_REPLY_BYTES:
                        raise LangGraphError(f"{method} {path}: reply larger than "
                                             f"{MAX_REPLY_BYTES} bytes")
                status = response.status_code
        except httpx.TimeoutException:
            raise LangGraphError(f"{method} {path}: timed out") from None
        except httpx.HTTPError as exc:
            raise LangGraphError(f"{method} {path}: {type(exc).__name__}: {exc}") from None
        if status >= 400:
            raise LangGraphError(f"{method} {path}: HTTP {status}: {_detail(bytes(raw))}",
                                 status=status)
        try:
            return json.loads(raw)
        except RecursionError:
            raise LangGraphError(f"{method} {path}: HTTP {status} with JSON nested too deeply to read",
                                 status=status) from None
        except ValueError:
            raise LangGraphError(f"{method} {path}: HTTP {status} with a body that is not JSON",
                                 status=status) from None


def _detail(raw: bytes) -> str:
    try:
        data = json.loads(raw)
        text = data.get("detail") if isinstance(data, dict) else None
        return str(text if text is not None else data)[:300]
    except (ValueError, RecursionError):  # str() of deep data recurses too
        return raw[:200].decode("utf-8", "replace")


def _thread_info(item: dict[str, Any]) -> ThreadInfo:
    thread_id = item.get("thread_id")
    if not isinstance(thread_id, str) or not thread_id:
        raise LangGraphError("a thread without thread_id")
    metadata = item.get("metadata")
    raw_interrupts = item.get("interrupts")
    interrupts: list[PendingInterrupt] = []
    if isinstance(raw_interrupts, dict):
        for task_interrupts in raw_interrupts.values():
            if not isinstance(task_interrupts, list):
                raise LangGraphError(f"thread {thread_id}: interrupts are not lists")
            for entry in task_interrupts:
                # `interrupt_id` is what servers before langgraph 0.4 called it
                if not isinstance(entry, dict):
                    raise LangGraphError(f"thread {thread_id}: an interrupt is not an object")
                interrupt_id = entry.get("id") or entry.get("interrupt_id")
                if not isinstance(interrupt_id, str) or not interrupt_id:
                    raise LangGraphError(f"thread {thread_id}: an interrupt without id")
                interrupts.append(PendingInterrupt(interrupt_id, entry.get("value")))
    elif raw_interrupts is not None:
        raise LangGraphError(f"thread {thread_id}: interrupts is not an object")
    return ThreadInfo(
        thread_id=thread_id,
        status=str(item.get("status") or ""),
        state_updated_at=str(item.get("state_updated_at") or ""),
        metadata=metadata if isinstance(metadata, dict) else {},
        interrupts=tuple(interrupts),
    )
