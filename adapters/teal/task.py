"""Reading a Teal task to learn what became of a resume call whose reply never came.

Teal answers a resume only after the tools and the rest of the agent's turn have run, so a
reply can be cut off (timeout, dropped connection) after Teal has acted. Teal's HTTP API
has no read of a task; its task store does (`AgentTask`: what the in-memory and Redis
persistence managers keep, under `task_persistence:task:<task_id>` in Redis). The source
reads it from `task_url` (a small read route in front of that store) and judges it here:

- `paused_here`: still paused on the same tool calls — the decision did not land;
- `paused_next`: paused again on other calls (a chained pause, same request id) — an
  approval landed and the next pause must be asked;
- `running`: the approved turn is still running (Teal writes `Running` on approval);
- `finished`: the turn ended with the agent's output (Teal never writes `Completed`: a
  finished task stays `Running` with the output as its last item);
- `rejected` (`Canceled`) and `failed` (`Failed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from adapters.teal.mapping import InvalidPause, TealPause, resume_path

Kind = Literal["paused_here", "paused_next", "running", "finished", "rejected", "failed"]


class InvalidTask(ValueError):
    """What `task_url` answered is not a Teal task; the message says why."""


@dataclass(frozen=True)
class TaskState:
    kind: Kind
    pause: TealPause | None = None  # for paused_here / paused_next


def judge(task: Any, request_id: str, fingerprint: str) -> TaskState:
    """Where the task stands relative to the pause `request_id` + `fingerprint` (the
    tool calls a person decided on)."""
    if not isinstance(task, dict):
        raise InvalidTask("expected a JSON object")
    status, items = task.get("status"), task.get("items")
    if not isinstance(status, str) or not isinstance(items, list) or not items:
        raise InvalidTask("expected `status` and a non-empty `items` list")
    last = items[-1]
    if not isinstance(last, dict):
        raise InvalidTask("items[-1] is not an object")
    if status == "Canceled":
        return TaskState("rejected")
    if status == "Failed":
        return TaskState("failed")
    if status == "Paused":
        pause = _pause(task, last)
        here = pause.request_id == request_id and pause.fingerprint() == fingerprint
        return TaskState("paused_here" if here else "paused_next", pause)
    if status in ("Running", "Completed"):
        done = last.get("role") == "assistant" and not last.get("pending_tool_calls")
        return TaskState("finished" if done else "running")
    raise InvalidTask(f"unknown task status {status[:40]!r}")


def _pause(task: dict[str, Any], last: dict[str, Any]) -> TealPause:
    rid = last.get("request_id")
    if not isinstance(rid, str):
        raise InvalidTask("the paused task's last item has no request_id")
    path = resume_path(rid)
    try:
        return TealPause.model_validate({
            "session_id": task.get("session_id"),
            "task_id": task.get("task_id"),
            "request_id": rid,
            "approval_url": f"{path}?action=approve",
            "rejection_url": f"{path}?action=reject",
            "tool_calls": last.get("pending_tool_calls"),
        })
    except (ValidationError, InvalidPause) as exc:
        raise InvalidTask(f"the paused task's pending tool calls are unreadable: {exc}"[:300]) from None

