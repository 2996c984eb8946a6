"""Pure translation of a person's answer back into what a LangGraph graph expects from
`Command(resume=...)`, driven by the `ResumePlan` kept in the request's `source_ref`.

agent-inbox: a list of one `{type: accept|edit|response|ignore, args}` (bare when the
interrupt value was bare); `HumanInTheLoopMiddleware`: `{"decisions": [...]}`, one per
action, in order; plain interrupts: the text itself (PROTOCOLS.md §6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Shape = Literal["plain", "inbox", "hitl"]

# Button labels shown to people, and the engine decision each one stands for.
APPROVE, EDIT, RESPOND, IGNORE, REJECT = "Approve", "Edit", "Respond", "Ignore", "Reject"
INBOX_TYPES = {APPROVE: "accept", EDIT: "edit", RESPOND: "response", IGNORE: "ignore"}
HITL_TYPES = {APPROVE: "approve", EDIT: "edit", REJECT: "reject"}


class ResumeError(ValueError):
    """The answer cannot be turned into a resume value for this interrupt."""


@dataclass(frozen=True)
class ActionPlan:
    """One tool call under review: how to write its decision back."""

    name: str
    args_key: str  # "args" or "arguments": edits are sent back under the key the engine used
    args: Any
    allowed: tuple[str, ...]  # button labels, e.g. ("Approve", "Reject")


@dataclass(frozen=True)
class ResumePlan:
    """What `resume_value` needs to rebuild the engine's answer; kept in `source_ref`."""

    shape: Shape
    listed: bool = False  # inbox value came as a list of one
    actions: tuple[ActionPlan, ...] = ()
    batch: bool = False  # too many actions: one decision applies to all of them

    def to_json(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "listed": self.listed,
            "batch": self.batch,
            "actions": [
                {"name": a.name, "args_key": a.args_key, "args": a.args, "allowed": list(a.allowed)}
                for a in self.actions
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResumePlan:
        try:
            actions = tuple(
                ActionPlan(
                    name=str(a["name"]),
                    args_key=str(a.get("args_key", "args")),
                    args=a.get("args"),
                    allowed=tuple(str(x) for x in a.get("allowed", ())),
                )
                for a in data.get("actions", ())
            )
            shape = data["shape"]
            if shape not in ("plain", "inbox", "hitl"):
                raise ValueError(shape)
            return cls(shape=shape, listed=bool(data.get("listed")), actions=actions,
                       batch=bool(data.get("batch")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ResumeError(f"stored resume plan is unreadable: {exc!r}") from None


def resume_value(plan: ResumePlan, values: dict[str, Any], reason: str | None = None) -> Any:
    """Build exactly what the graph expects back from `interrupt()` for this answer.

    Raises ResumeError when the answer does not fit the plan (it was validated against the
    questions already, so this means a stored request was tampered with or is from an
    incompatible version).
    """
    if plan.shape == "plain":
        answer = values.get("answer")
        if not isinstance(answer, str):
            raise ResumeError("a plain interrupt needs a text answer")
        return answer
    if plan.shape == "inbox":
        return _resume_inbox(plan, values, reason)
    return _resume_hitl(plan, values, reason)


def _label(value: Any, allowed: tuple[str, ...], qid: str) -> str:
    """The chosen button label; confirm answers are "yes"/"no"."""
    if value == "yes":
        return APPROVE
    if value == "no":
        return next((x for x in allowed if x in (REJECT, IGNORE)), REJECT)
    if isinstance(value, str) and value in allowed:
        return value
    raise ResumeError(f"{qid}: {value!r} is not one of {list(allowed)}")


def _resume_inbox(plan: ResumePlan, values: dict[str, Any], reason: str | None) -> Any:
    if len(plan.actions) != 1:
        raise ResumeError("an agent-inbox plan holds exactly one action")
    action = plan.actions[0]
    label = _label(values.get("decision"), action.allowed, "decision")
    kind = INBOX_TYPES[label]
    args: Any = None
    if label == EDIT:
        edited = values.get("args")
        args = {"action": action.name, "args": action.args if edited in (None, "", {}) else edited}
    elif label == RESPOND:
        text = values.get("response")
        args = text if isinstance(text, str) and text else (reason or "")
    response = {"type": kind, "args": args}
    return [response] if plan.listed else response


def _resume_hitl(plan: ResumePlan, values: dict[str, Any], reason: str | None) -> Any:
    decisions: list[dict[str, Any]] = []
    if plan.batch:
        common = tuple(x for x in (APPROVE, REJECT) if all(x in a.allowed for a in plan.actions))
        label = _label(values.get("decision"), common or (APPROVE,), "decision")
        message = _message(values.get("message"), reason)
        for action in plan.actions:
            decisions.append(_decision(action, label, None, message))
        return {"decisions": decisions}
    single = len(plan.actions) == 1
    for index, action in enumerate(plan.actions):
        suffix = "" if single else f"_{index}"
        label = _label(values.get(f"decision{suffix}"), action.allowed, f"decision{suffix}")
        message = _message(values.get(f"message{suffix}"), reason)
        decisions.append(_decision(action, label, values.get(f"args{suffix}"), message))
    return {"decisions": decisions}


def _message(value: Any, reason: str | None) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    return reason or None


def _decision(action: ActionPlan, label: str, edited: Any, message: str | None) -> dict[str, Any]:
    if label == EDIT:
        args = action.args if edited in (None, "", {}) else edited
        return {"type": "edit", "edited_action": {"name": action.name, action.args_key: args}}
    if label == REJECT:
        return {"type": "reject", "message": message} if message else {"type": "reject"}
    if label == APPROVE:
        return {"type": "approve"}
    raise ResumeError(f"{label!r} is not a decision for `{action.name}`")
