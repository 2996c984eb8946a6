from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bridge.config import Route
from bridge.models import Request
from bridge.router import Router


def request(**kw: Any) -> Request:
    now = datetime.now(UTC)
    data: dict[str, Any] = {"id": "r_1", "title": "t", "questions": [{"prompt": "?"}], "created_at": now,
                            "updated_at": now, "source": "delta"}
    data.update(kw)
    return Request.model_validate(data)


ROUTES = [
    Route(name="deploys", match={"source": "delta", "workspace": "*/deploy-*"}, notify=["slack:#deploys"]),
    Route(name="db-tools", match={"tool": ["db_*", "sql_*"]}, notify=["slack:#dba"]),
    Route(name="team-label", match={"team": "payments", "labels.env": "prod"}, notify=["telegram:1"]),
    Route(name="any-delta", match={"source": "delta"}, notify=["web"]),
]
router = Router(ROUTES, Route(name="default"))


def test_first_match_wins_in_order() -> None:
    assert router.choose(request(workspace="/srv/a/deploy-api")).name == "deploys"
    assert router.choose(request(workspace="/srv/a/other")).name == "any-delta"


def test_glob_lists_and_missing_fields() -> None:
    assert router.choose(request(source="webhook", tool="sql_exec")).name == "db-tools"
    assert router.choose(request(source="webhook", tool="rm")).name == "default"
    assert router.choose(request(source="webhook")).name == "default"  # no tool: no match


def test_labels_by_plain_key_or_labels_prefix() -> None:
    hit = request(source="webhook", labels={"team": "payments", "env": "prod"})
    miss = request(source="webhook", labels={"team": "payments", "env": "dev"})
    assert router.choose(hit).name == "team-label"
    assert router.choose(miss).name == "default"


def test_globs_are_case_sensitive_and_targets_collected() -> None:
    assert router.choose(request(workspace="/srv/a/DEPLOY-x")).name == "any-delta"
    assert router.all_targets() == {"slack:#deploys", "slack:#dba", "telegram:1", "web"}
    assert router.get("gone").name == "default"
