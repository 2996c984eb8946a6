"""Did the run take the answer? Read from the run itself (`GET /api/workflows/{id}/runs/{runId}`).

Mastra's `/resume` answers 200 for any run that exists and only logs what goes wrong, so
the bridge judges by the run's own record instead:

- `waiting`: the step still waits with the very suspension the request was made for;
- `claimed`: that suspension is still recorded but the run is `running` — someone's resume
  is executing right now (Mastra flips the status before it runs the step);
- `took`: the suspension is gone and the step recorded a `resumePayload` that matches what
  the bridge sends (given after the question was asked): the run has this answer — also
  when the reply to the bridge's own resume call was lost, or the bridge restarted;
- `gone`: anything else (finished, cancelled, moved on with another answer, deleted).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from adapters.mastra.mapping import InvalidSnapshot, read_snapshot

RUNNING = ("running", "pending", "waiting")


class RunState(StrEnum):
    waiting = "waiting"
    claimed = "claimed"
    took = "took"
    gone = "gone"


@dataclass(frozen=True)
class Verdict:
    state: RunState
    reason: str = ""


def run_view(body: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(status, step results, suspended paths) of one run, from Mastra 1.x's processed run
    (`steps`) or from a raw record with a `snapshot`."""
    if not isinstance(body, dict):
        raise InvalidSnapshot("the run is not an object")
    if "snapshot" in body and "steps" not in body:
        snap = read_snapshot({"runId": str(body.get("runId", "?")), "snapshot": body["snapshot"]})
        status, steps, paths = snap.get("status"), snap.get("context"), snap.get("suspendedPaths")
    else:
        status, steps, paths = body.get("status"), body.get("steps"), body.get("suspendedPaths")
    if not isinstance(status, str) or not isinstance(steps, dict):
        raise InvalidSnapshot("the run has no status or steps")
    return status, steps, paths if isinstance(paths, dict) else {}


def same_answer(sent: Any, recorded: Any) -> bool:
    """What the step recorded is what we send (Mastra may drop keys its schema does not know,
    or add defaults; a key both have must hold the same value)."""
    if isinstance(sent, dict) and isinstance(recorded, dict):
        shared = [k for k in sent if k in recorded]
        return all(recorded[k] == sent[k] for k in shared) and (bool(shared) or not sent)
    return bool(sent == recorded)


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _suspended(steps: dict[str, Any], step: str, name: str) -> bool:
    """Mastra's processed run marks the outer step of a nested suspension `running` and the
    inner one (`outer.inner`) `suspended`."""
    entry, inner = steps.get(step), steps.get(name) if name != step else None
    return (isinstance(entry, dict) and entry.get("status") == "suspended") or (
        isinstance(inner, dict) and inner.get("status") == "suspended")


def judge(body: Any, step: str, suspended_at: str, sent: Any, name: str | None = None) -> Verdict:
    """Where the run stands for the suspension of `step` (`name`: its whole path, for nested
    workflows) at `suspended_at` (raises InvalidSnapshot)."""
    status, steps, paths = run_view(body)
    entry = steps.get(step)
    entry = entry if isinstance(entry, dict) else None
    if entry is not None and _suspended(steps, step, name or step):
        when = entry.get("suspendedAt")
        if when is None or str(when) == suspended_at:
            if status == "suspended":
                return Verdict(RunState.waiting)
            if status in RUNNING:
                return Verdict(RunState.claimed, "Mastra is running this run right now (resumed just now)")
            return Verdict(RunState.gone, f"the run no longer waits for this answer: it is {status}")
    asked, answered = _number(suspended_at), _number(entry.get("resumedAt")) if entry else None
    after = asked is None or answered is None or answered >= asked
    if entry is not None and "resumePayload" in entry and after and same_answer(sent, entry["resumePayload"]):
        return Verdict(RunState.took)
    if entry is None:
        why = f"step {step} is not part of the run any more"
    elif "resumePayload" in entry and after:
        why = f"step {step} was answered elsewhere with another answer"
    else:
        why = f"step {step} is {entry.get('status', 'in an unknown state')}"
    waiting_at = [str(s) for s in paths] or [str(k) for k, v in steps.items()
                                             if isinstance(v, dict) and v.get("status") == "suspended" and "." not in k]
    waiting_at = waiting_at if status == "suspended" else []
    now = f"the run is {status}" + (f", waiting at {', '.join(waiting_at)[:200]}" if waiting_at else "")
    return Verdict(RunState.gone, f"the run no longer waits for this answer: {why}; {now}")


def refusal(result: Any) -> str | None:
    """Mastra's reason when a resume was run but the resume data was refused (a nested
    workflow's step validates its own resume data and fails the run), else None."""
    if not isinstance(result, dict) or result.get("status") != "failed":
        return None
    error = result.get("error")
    if not isinstance(error, dict):
        return None
    message = str(error.get("message") or "")
    details = error.get("details")
    if (isinstance(details, dict) and details.get("type") == "resume data") \
            or error.get("code") == "WORKFLOW_SCHEMA_VALIDATION_FAILED" or message.startswith("Invalid resume data"):
        return message[:500] or "Invalid resume data"
    return None
