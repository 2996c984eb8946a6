"""Requests for Slack tests, built straight from the model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bridge.models import Answer, Question, Request, RequestState, Responder

NOW = datetime(2026, 1, 5, 14, 2, tzinfo=UTC)


def make_request(*questions: dict[str, Any], **fields: Any) -> Request:
    """A stored request with `questions` (dicts for Question) and any other fields."""
    qs = [Question.model_validate(q) for q in questions] or [
        Question.model_validate({"kind": "confirm", "prompt": "Deploy to prod?"})]
    base: dict[str, Any] = {
        "id": "r_test0000001",
        "title": "Deploy api v2.3 to production",
        "engine": "delta",
        "workspace": "/srv/agents/a/workspaces/deploy-api",
        "agent": "deployer",
        "tool": "shell",
        "context": {"command": "kubectl rollout restart deploy/api", "namespace": "prod"},
        "questions": qs,
        "state": RequestState.posted,
        "created_at": NOW,
        "updated_at": NOW,
        "deadline": NOW + timedelta(hours=2),
    }
    base.update(fields)
    return Request(**base)


def answered(request: Request, values: dict[str, Any], *, user: str = "U0ALICE",
             reason: str | None = None, via: str = "slack") -> Request:
    answer = Answer(values=values, responder=Responder(platform="slack", user_id=user, name="alice"),
                    via=via, answered_at=NOW, reason=reason)
    return request.model_copy(update={"state": RequestState.answered, "answer": answer})
