from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bridge.config import Route
from bridge.models import Request
from bridge.router import Router
from bridge.rules import route_as_json


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


def test_a_route_is_dumped_for_the_rules_once_and_a_reloaded_one_again() -> None:
    first = Route(name="deploys", quorum=2, remind_every=timedelta(minutes=5))
    dumped = route_as_json(first)
    assert dumped == {**first.model_dump(), "remind_every": 300.0}
    assert route_as_json(first) is dumped  # the same route object: made once
    reloaded = Route(name="deploys", quorum=3, remind_every=timedelta(minutes=5))  # a reload builds new routes
    assert route_as_json(reloaded)["quorum"] == 3 and dumped["quorum"] == 2
    assert Route.model_validate(route_as_json(reloaded)) == reloaded
