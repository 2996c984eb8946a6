"""Delta Engine request ⇄ bridge model: pure functions, no I/O."""

from __future__ import annotations

from typing import Any

from adapters.delta.layout import Layout, Mailbox
from adapters.delta.mailbox import DeltaRequest
from bridge.models import Answer, Request, RequestIn
from bridge.questions import MAX_TEXT, Question, QuestionKind

ENGINE = "delta"
QUESTION_ID = "answer"
REASON_FIELD = "{reason}"
TITLE_MAX = 200
TASK_MAX = 2000


def question_kind(request: DeltaRequest) -> QuestionKind:
    """`password` or `sensitive: true` → secret; `confirmation` → confirm; else text."""
    if request.is_secret:
        return QuestionKind.secret
    if request.is_confirmation:
        return QuestionKind.confirm
    return QuestionKind.text


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def title_for(prompt: str) -> str:
    """The prompt's first non-empty line, clipped to fit a chat message header."""
    first = next((line.strip() for line in prompt.splitlines() if line.strip()), prompt.strip())
    return _clip(first or "Delta Engine asks", TITLE_MAX)


def to_request_in(
    mailbox: Mailbox,
    request: DeltaRequest,
    run_id: str | None,
    metadata: dict[str, Any],
    version: str | None = None,
) -> RequestIn:
    """The bridge request for one `request.json`, keyed by its `request_id`.

    Workspace, run id, agent and task (from metadata.json) are carried so routes can
    match on them and people see what they approve.
    """
    context: dict[str, Any] = {
        "mailbox": mailbox.directory,
        "layout": str(mailbox.layout),
        "input_type": request.input_type,
    }
    if request.timestamp:
        context["asked_at"] = request.timestamp[:64]
    if version:
        context["engine_version"] = version[:32]
    for key in ("status", "start_time", "hostname", "iterations_completed", "pid"):
        if key in metadata:
            context[key] = metadata[key]
    task = metadata.get("task")
    if isinstance(task, str):
        context["task"] = _clip(task, TASK_MAX)
    agent = metadata.get("agent_ref")
    labels = {"layout": str(mailbox.layout)}
    if run_id:
        labels["run_id"] = run_id[:500]
    return RequestIn(
        external_id=request.request_id,
        title=title_for(request.prompt),
        description=_clip(task, 500) if isinstance(task, str) else "",
        engine=ENGINE,
        workspace=mailbox.workspace[:1000],
        run_id=run_id[:200] if run_id else None,
        agent=agent[:500] if isinstance(agent, str) else None,
        tool="ask_human",
        context=context,
        labels=labels,
        questions=[
            Question(
                id=QUESTION_ID,
                kind=question_kind(request),
                prompt=_clip(request.prompt, MAX_TEXT),
            )
        ],
    )


def source_ref(mailbox: Mailbox, request: DeltaRequest, run_id: str | None) -> dict[str, Any]:
    """What `deliver` needs to find the mailbox again (stored with the request)."""
    return {
        "workspace": mailbox.workspace,
        "mailbox": mailbox.directory,
        "layout": str(mailbox.layout),
        "run_id": run_id,
        "metadata_path": mailbox.metadata_path,
        "request_id": request.request_id,
        "root": mailbox.root,
    }


def mailbox_from_ref(ref: dict[str, Any]) -> Mailbox:
    """The Mailbox a stored `source_ref` points at (KeyError/ValueError when malformed)."""
    return Mailbox(
        workspace=str(ref["workspace"]),
        directory=str(ref["mailbox"]),
        layout=Layout(ref["layout"]),
        run_id=ref.get("run_id"),
        metadata_path=ref.get("metadata_path"),
        root=ref.get("root"),
    )


def response_text(answer: Answer, request: Request | None = None, reason_line: str | None = None) -> str:
    """What goes into `response.txt`: the answer value (confirm → `yes`/`no`), and for a
    yes/no question a person answered with a reason, `reason_line` (`{reason}` filled in)
    on the next line, so the agent's model learns why. Never for a secret."""
    value = answer.values.get(QUESTION_ID)
    if value is None and answer.values:
        value = next(iter(answer.values.values()))
    if isinstance(value, bool):
        value = "yes" if value else "no"
    text = "" if value is None else value if isinstance(value, str) else str(value)
    reason = (answer.reason or "").strip()
    if not (reason and reason_line and request is not None) or answer.via == "timeout":
        return text  # a route's timeout answer is written like a person's, bare
    question = request.question(QUESTION_ID) or request.questions[0]
    if question.kind is not QuestionKind.confirm or request.secret_question_ids:
        return text
    return f"{text}\n{reason_line.replace(REASON_FIELD, reason)}"
