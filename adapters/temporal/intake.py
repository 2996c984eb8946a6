"""What a workflow's activity posts (pure): the request and the workflow waiting for it.

The body is `{"request": <the native request model>, "workflow": {...}}`; the workflow
part names where the answer goes. The external id is made here from the workflow run and
the caller's key, so an activity retried by Temporal finds the request it already made.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bridge.models import RequestIn
from bridge.questions import QuestionKind

HANDLER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,199}$"


class IntakeRefused(ValueError):
    """A body this source cannot take; the message names the field and the fix."""


class WorkflowRef(BaseModel):
    """The workflow run that waits, and how the answer reaches it."""

    model_config = ConfigDict(extra="forbid")

    namespace: str = Field(min_length=1, max_length=200)
    workflow_id: str = Field(min_length=1, max_length=1000)
    run_id: str = Field(min_length=1, max_length=200)
    #: the caller's name for this question within the run (one request per key and run)
    key: str = Field(min_length=1, max_length=200)
    #: the update (or signal) handler the workflow registered for answers
    handler: str = Field(default="hitl_bridge_answer", pattern=HANDLER_PATTERN)
    deliver_as: Literal["update", "signal"] = "update"
    workflow_type: str | None = Field(default=None, max_length=500)


class TemporalAsk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    request: RequestIn
    workflow: WorkflowRef


def external_id(ref: WorkflowRef) -> str:
    """One id per (namespace, workflow, run, key), short enough for any workflow id."""
    digest = hashlib.sha256(json.dumps(
        [ref.namespace, ref.workflow_id, ref.run_id, ref.key]).encode()).hexdigest()
    return f"temporal:{digest}"


def parse_ask(body: Any, namespace: str) -> tuple[RequestIn, dict[str, Any]]:
    """The request to submit and the `source_ref` delivery needs; raises IntakeRefused or
    pydantic's ValidationError."""
    if not isinstance(body, dict):
        raise IntakeRefused("the body must be a JSON object with `request` and `workflow`")
    ask = TemporalAsk.model_validate(body)
    ref = ask.workflow
    if ref.namespace != namespace:
        raise IntakeRefused(f"workflow.namespace: this source serves namespace {namespace!r}, "
                            f"not {ref.namespace!r} (configure a temporal source for it)")
    if any(q.kind is QuestionKind.secret for q in ask.request.questions):
        raise IntakeRefused("request.questions: a secret answer would be kept in clear in the "
                            "workflow's history; ask for secrets another way")
    request = ask.request.model_copy(update={
        "external_id": external_id(ref),
        "engine": ask.request.engine or "temporal",
        "run_id": ask.request.run_id or ref.workflow_id[:200],
        "session": ask.request.session or ref.run_id,
        "context": {**ask.request.context,
                    "temporal": {"namespace": ref.namespace, "workflow_id": ref.workflow_id[:500],
                                 "run_id": ref.run_id, "workflow_type": ref.workflow_type}},
    })
    return request, ref.model_dump()


__all__ = ["IntakeRefused", "TemporalAsk", "ValidationError", "WorkflowRef", "external_id", "parse_ask"]
