"""Pure translation between Mastra's suspend payloads and the bridge model (PROTOCOLS §4).

A suspend payload is free-form JSON written by the workflow's author. We read it the
way people write it: `question`/`message`/`prompt`/`reason`/`title` is the prompt;
`options` (strings, or objects with `label`/`value`/`id`) makes a `choice`; `fields`
(names, `{name: description}` or `[{name, label}]`) makes a `form`; anything else is a
`text` answer. The resume value is the chosen option's value, the text, or the form
object; for workflows it is wrapped as `resumeData = {<resume_key>: value}` unless it is
a form (then the form object is the resumeData), for inbox tasks it is the `payload`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from bridge.models import Answer, FormField, Question, QuestionKind, RequestIn, fit_json

ENGINE = "mastra"
PROMPT_KEYS = ("question", "message", "prompt", "reason", "title", "description")
MAX_PROMPT = 4000
_FIELD_NAME = re.compile(r"[^A-Za-z0-9_.:-]")


class InvalidSnapshot(ValueError):
    """A run or task from the engine that cannot be read (garbage, wrong types)."""


@dataclass
class Shape:
    """What a suspend payload asks: kind, prompt, option label → value, form fields."""

    kind: QuestionKind
    prompt: str
    options: dict[str, Any] = field(default_factory=dict)
    fields: list[FormField] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _option_pairs(raw: Any) -> dict[str, Any]:
    """label → value; labels made unique and ≤ 200 characters."""
    pairs: dict[str, Any] = {}
    if not isinstance(raw, list):
        return pairs
    for item in raw[:100]:
        value: Any
        if isinstance(item, str | int | float | bool):
            label, value = str(item), item
        elif isinstance(item, dict):
            value = item.get("value", item.get("id", item.get("label")))
            label = str(item.get("label") or item.get("name") or value or "")
        else:
            continue
        label = label.strip()[:190] or "option"
        base, n = label, 2
        while label in pairs:
            label = f"{base} ({n})"
            n += 1
        pairs[label] = value
    return pairs


def _form_fields(raw: Any) -> list[FormField]:
    items: list[tuple[str, str, bool, list[str]]] = []
    if isinstance(raw, dict):
        items = [(str(k), _text(v) or str(k), True, []) for k, v in raw.items()]
    elif isinstance(raw, list):
        for f in raw:
            if isinstance(f, str):
                items.append((f, f, True, []))
            elif isinstance(f, dict) and isinstance(f.get("name"), str):
                opts = [str(o) for o in f.get("options", []) if isinstance(o, str | int | float)]
                label = _text(f.get("label")) or _text(f.get("description")) or f["name"]
                items.append((f["name"], label, bool(f.get("required", True)), opts[:100]))
    out: list[FormField] = []
    seen: set[str] = set()
    for name, label, required, opts in items[:50]:
        clean = _FIELD_NAME.sub("_", name)[:64] or "field"
        if clean in seen:
            continue
        seen.add(clean)
        out.append(FormField(name=clean, label=label[:500], required=required, options=list(dict.fromkeys(opts))))
    return out


def read_payload(payload: Any, fallback: str) -> Shape:
    """The question a suspend payload asks (never raises: unknown shapes become text)."""
    data = payload if isinstance(payload, dict) else {"value": payload}
    prompt = next((t for k in PROMPT_KEYS if (t := _text(data.get(k)))), None)
    details = {k: v for k, v in data.items() if k not in PROMPT_KEYS and k not in ("options", "fields")}
    if prompt is None:
        prompt = fallback if not data else f"{fallback}\n{json.dumps(data, default=str)[:MAX_PROMPT]}"
    prompt = prompt[:MAX_PROMPT]
    options = _option_pairs(data.get("options"))
    if options:
        return Shape(QuestionKind.choice, prompt, options=options, details=details)
    fields = _form_fields(data.get("fields"))
    if fields:
        return Shape(QuestionKind.form, prompt, fields=fields, details=details)
    return Shape(QuestionKind.text, prompt, details=details)


def shape_to_question(shape: Shape) -> Question:
    return Question(
        id="answer",
        kind=shape.kind,
        prompt=shape.prompt,
        options=list(shape.options) if shape.kind is QuestionKind.choice else [],
        fields=shape.fields,
    )


def answer_value(shape_kind: str, options: dict[str, Any], answer: Answer) -> Any:
    """The value the engine gets: the option's own value (not its label), text, or object."""
    value = answer.values.get("answer")
    if shape_kind == QuestionKind.choice and isinstance(value, str):
        return options.get(value, value)
    return value


# -- workflows ------------------------------------------------------------------------------
@dataclass
class SuspendedStep:
    workflow: str
    run_id: str
    step: str
    payload: Any
    suspended_at: str

    @property
    def external_id(self) -> str:
        return f"wf:{self.workflow}:{self.run_id}:{self.step}:{self.suspended_at}"


def suspended_steps(workflow: str, run: Any) -> list[SuspendedStep]:
    """Each suspended step of one run from `GET …/runs?status=suspended`; [] when none."""
    if not isinstance(run, dict) or not isinstance(run.get("runId"), str):
        raise InvalidSnapshot("a run needs a runId")
    snap = run.get("snapshot")
    if isinstance(snap, str):
        try:
            snap = json.loads(snap)
        except (ValueError, RecursionError):
            raise InvalidSnapshot(f"run {run['runId']}: snapshot is not JSON") from None
    if not isinstance(snap, dict):
        raise InvalidSnapshot(f"run {run['runId']}: snapshot is not an object")
    if snap.get("status", "suspended") != "suspended":
        return []
    paths = snap.get("suspendedPaths") or {}
    context = snap.get("context") or {}
    if not isinstance(paths, dict) or not isinstance(context, dict):
        raise InvalidSnapshot(f"run {run['runId']}: suspendedPaths/context are not objects")
    steps = []
    for step in paths:
        found = context.get(step)
        entry: dict[str, Any] = found if isinstance(found, dict) else {}
        if entry.get("status", "suspended") != "suspended":
            continue
        when = entry.get("suspendedAt") or snap.get("timestamp") or run.get("updatedAt") or ""
        steps.append(SuspendedStep(workflow, run["runId"], str(step), entry.get("suspendPayload"), str(when)))
    return steps


def step_to_request(step: SuspendedStep) -> tuple[RequestIn, Shape]:
    shape = read_payload(step.payload, f"Workflow {step.workflow} is waiting at step {step.step}")
    request = RequestIn(
        external_id=step.external_id[:200],
        title=f"{step.workflow}: {step.step}"[:500],
        engine=ENGINE,
        run_id=step.run_id[:200],
        agent=step.workflow[:500],
        tool=step.step[:200],
        context={
            "workflow": step.workflow,
            "step": step.step,
            **({"details": fit_json(shape.details)} if shape.details else {}),
        },
        labels={"workflow": step.workflow[:500], "kind": "workflow"},
        questions=[shape_to_question(shape)],
    )
    return request, shape


def workflow_resume_body(step: str, kind: str, value: Any, resume_key: str) -> dict[str, Any]:
    """`{"step": …, "resumeData": …}`: forms as they are, other answers under `resume_key`."""
    data = value if kind == QuestionKind.form and isinstance(value, dict) else {resume_key: value}
    return {"step": step, "resumeData": data}


# -- inbox tasks ------------------------------------------------------------------------------
@dataclass
class WaitingTask:
    inbox: str
    task_id: str
    title: str
    payload: Any
    reason: str | None
    suspended_at: str

    @property
    def external_id(self) -> str:
        return f"inbox:{self.inbox}:{self.task_id}:{self.suspended_at}"


def waiting_task(inbox: str, task: Any) -> WaitingTask | None:
    if not isinstance(task, dict) or not isinstance(task.get("id"), str):
        raise InvalidSnapshot("a task needs an id")
    if task.get("status") != "waiting_for_input":
        return None
    sp = task.get("suspendPayload")
    sp = sp if isinstance(sp, dict) else {}
    return WaitingTask(
        inbox=inbox,
        task_id=task["id"],
        title=_text(task.get("title")) or f"Task {task['id']}",
        payload=sp.get("payload"),
        reason=_text(sp.get("reason")),
        suspended_at=str(task.get("suspendedAt") or ""),
    )


def task_to_request(task: WaitingTask) -> tuple[RequestIn, Shape]:
    payload = task.payload if isinstance(task.payload, dict) else {"data": task.payload}
    shape = read_payload(payload, task.reason or f"{task.title} is waiting for input")
    context: dict[str, Any] = {"inbox": task.inbox, "task": task.task_id}
    data = payload.get("data")
    if data is not None:
        context["data"] = fit_json(data)
    request = RequestIn(
        external_id=task.external_id[:200],
        title=task.title[:500],
        description=task.reason or "",
        engine=ENGINE,
        run_id=task.task_id[:200],
        agent=task.inbox[:500],
        context=context,
        labels={"inbox": task.inbox[:500], "kind": "inbox"},
        questions=[shape_to_question(shape)],
    )
    return request, shape
