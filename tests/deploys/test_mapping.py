"""The pure halves of the deploy sources: how a deploy reads, the decision written back,
the strict reading of GitHub webhooks (hostile ones too), and github:/gitlab: handles."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from adapters.deploys import Commit, Deploy, decision_of, deploy_request, deploy_title
from adapters.github.settings import GitHubConfig
from adapters.github.webhooks import ForgedWebhook, UnreadableWebhook, check_signature, protection_rule, wait_ended
from adapters.gitlab.settings import GitLabConfig
from adapters.gitlab.source import approvals_required
from bridge.models import Answer, Request, Responder
from bridge.people import People, PeopleError
from bridge.ports import Outcome

API = "https://api.github.com"
SECRET = "It's a Secret to Everybody"


def deploy(**extra: Any) -> Deploy:
    base: dict[str, Any] = {"platform": "github", "external_id": "github:acme/payments-api:1:production",
                            "project": "acme/payments-api", "environment": "production", "ref": "main",
                            "sha": "3f2c1a9d0b7e", "triggered_by": "ana"}
    return Deploy(**{**base, **extra})


def test_a_deploy_reads_as_one() -> None:
    commits = [Commit("1", "ana", "a"), Commit("2", "bo", "b"), Commit("3", "ana", "c"), Commit("4", "bo", "d")]
    assert deploy_title(deploy(commits=commits)) == "Deploy payments-api@3f2c1a9 to production — 4 commits by ana, bo"
    assert deploy_title(deploy()) == "Deploy payments-api@3f2c1a9 to production"
    many = [Commit(str(i), f"dev{i}", "x") for i in range(5)]
    assert deploy_title(deploy(commits=many, commits_total=250)).endswith("250 commits by dev0, dev1, dev2 and 2 more")
    request = deploy_request(deploy(commits=commits))
    assert request.labels == {"repo": "acme/payments-api", "environment": "production"}
    assert request.requested_by == "github:ana" and request.questions[0].kind == "confirm"
    assert request.context["commits_total"] == 4 and "`1` a (ana)" in request.description


def test_hostile_text_is_bounded() -> None:
    long = "x" * 10_000
    request = deploy_request(deploy(environment=long[:400], ref=long, commits=[Commit("1", long, long)] * 300))
    assert len(request.title) <= 500 and len(request.description) <= 8000
    assert len(request.context["commits"]) == 20


def outcome(state: str, value: str | None, reason: str | None = None, via: str = "slack") -> Outcome:
    now = datetime(2026, 11, 27, tzinfo=UTC)
    request = Request.model_validate({**deploy_request(deploy()).model_dump(), "id": "r_1", "created_at": now,
                                      "updated_at": now})
    answer = None if value is None else Answer(values={"deploy": value}, responder=Responder(
        platform="slack", user_id="U0BOB", person="bo"), via=via, answered_at=now, reason=reason)
    return Outcome(request, state, answer)


def test_the_decision_written_back() -> None:
    approved = decision_of(outcome("answered", "yes"))
    assert approved is not None and approved.approved
    assert approved.comment == "Approved by bo via slack (hitl-bridge r_1)"
    rejected = decision_of(outcome("answered", "no", "freeze"))
    assert rejected is not None and not rejected.approved and rejected.comment.endswith(": freeze")
    timed_out = decision_of(outcome("expired", "no", via="timeout"))
    assert timed_out is not None and "deadline" in timed_out.comment
    assert decision_of(outcome("cancelled", None)) is None
    assert decision_of(outcome("answered", "maybe")).approved is False  # type: ignore[union-attr]


def signed(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def test_signature_check_follows_githubs_example() -> None:
    # GitHub's documented test vector (Validating webhook deliveries)
    header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    check_signature(SECRET, b"Hello, World!", header)
    for bad in (None, "", "sha1=" + "0" * 40, header[:-1], header.upper(), signed(b"Hello, World!", "other")):
        with pytest.raises(ForgedWebhook):
            check_signature(SECRET, b"Hello, World!", bad)


def rule_payload(**extra: Any) -> dict[str, Any]:
    return {"action": "requested", "environment": "production", "sha": "abc123", "ref": "refs/heads/main",
            "deployment_callback_url": f"{API}/repos/acme/api/actions/runs/42/deployment_protection_rule",
            "deployment": {"id": 7, "creator": {"login": "ana"}}, "repository": {"full_name": "acme/api"},
            "installation": {"id": 9}, "sender": {"login": "someone"}, **extra}


def test_protection_rule_is_read_strictly() -> None:
    rule = protection_rule(rule_payload(), API)
    assert (rule.repo, rule.run_id, rule.environment, rule.installation_id, rule.creator) == (
        "acme/api", 42, "production", 9, "ana")
    hostile = [
        {"deployment_callback_url": "https://evil.example/repos/acme/api/actions/runs/42/deployment_protection_rule"},
        {"deployment_callback_url": f"{API}/repos/acme/api/actions/runs/42/cancel"},
        {"deployment_callback_url": f"{API}/repos/acme/api/actions/runs/-1/deployment_protection_rule"},
        {"deployment_callback_url": f"{API}/repos/../api/actions/runs/42/deployment_protection_rule",
         "repository": {"full_name": "../api"}},
        {"repository": {"full_name": "other/repo"}},
        {"environment": ""}, {"environment": ["production"]}, {"environment": "x" * 501},
        {"sha": None, "deployment": {}}, {"deployment_callback_url": 42}, {"installation": {"id": "9"}},
    ]
    for change in hostile:
        with pytest.raises(UnreadableWebhook):
            protection_rule(rule_payload(**change), API)


def test_waits_that_end() -> None:
    repo = {"repository": {"full_name": "acme/api"}}
    ended = wait_ended("workflow_run", {**repo, "action": "completed",
                                        "workflow_run": {"id": 42, "conclusion": "cancelled"}})
    assert ended is not None and (ended.run_id, ended.environment) == (42, None) and "cancelled" in ended.why
    assert wait_ended("workflow_run", {**repo, "action": "requested", "workflow_run": {"id": 42}}) is None
    status = wait_ended("deployment_status", {**repo, "deployment_status": {"state": "success"},
                                              "workflow_run": {"id": 42}, "deployment": {"environment": "prod"}})
    assert status is not None and status.environment == "prod"
    assert wait_ended("deployment_status", {**repo, "deployment_status": {"state": "waiting"},
                                            "workflow_run": {"id": 42}}) is None
    assert wait_ended("workflow_run", {"action": "completed", "workflow_run": {"id": True}, **repo}) is None
    assert wait_ended("push", repo) is None


def test_github_and_gitlab_handles_name_people() -> None:
    people = People({"ana": ["slack:U0123ABC", "github:Ana-GH", "gitlab:Ana.Dev"]})
    assert people.person_of("github:ana-gh") == "ana" and people.person_of("gitlab:ana.dev") == "ana"
    for bad in ("github:-ana", "github:a--b", "github:" + "a" * 40, "gitlab:.ana", "gitlab:ana smith"):
        with pytest.raises(PeopleError):
            People({"x": [bad]})


def test_config_errors_say_what_is_missing() -> None:
    with pytest.raises(ValidationError, match="mode: app needs app_id, private_key, webhook_secret"):
        GitHubConfig.model_validate({})
    with pytest.raises(ValidationError, match="mode: poll needs `token`"):
        GitHubConfig.model_validate({"mode": "poll", "repositories": ["a/b"]})
    with pytest.raises(ValidationError, match="is not owner/name"):
        GitHubConfig.model_validate({"mode": "poll", "token": "t", "repositories": ["../etc"]})
    with pytest.raises(ValidationError, match="not a project path"):
        GitLabConfig.model_validate({"token": "t", "projects": ["acme/../x"]})
    with pytest.raises(ValidationError, match="at least 16"):
        GitLabConfig.model_validate({"token": "t", "projects": ["acme/x"], "webhook_secret": "short"})


def test_gitlab_approvals_required() -> None:
    assert approvals_required({}) == 1
    assert approvals_required({"approval_summary": {"rules": [{"required_approvals": 2},
                                                              {"required_approvals": 1}]}}) == 3
    assert approvals_required({"approval_summary": {"rules": [{"required_approvals": "9"}, "x"]}}) == 1


def test_deploy_platforms_are_sources_that_name_people_never_channels() -> None:
    from bridge.people import handle_platforms
    from bridge.registry import source_factories
    from bridge.specs import channel_specs, identity_specs

    assert {s.name for s in identity_specs()} >= {"github", "gitlab"}
    assert not {"github", "gitlab"} & {s.name for s in channel_specs()}
    assert {"github", "gitlab"} <= set(handle_platforms())
    assert source_factories()["gitlab"] == "adapters.gitlab:build_source"
