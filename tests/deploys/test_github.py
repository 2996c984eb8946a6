"""GitHub deployment approvals end to end: a signed `deployment_protection_rule` webhook →
a bridge request in Slack → a click → the decision on the run's protection-rule endpoint
of the fake GitHub, with an installation token bought with the App's JWT. Also: forged
webhooks, a run cancelled in GitHub, four-eyes, rate limits, and the polling mode."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.github.settings import GitHubConfig
from adapters.github.source import GitHubSource
from bridge.models import Request
from tests.deploys.conftest import deploy_bridge
from tests.fakes.github_api import APP_ID, WEBHOOK_SECRET, FakeGitHub, Run
from tests.fakes.slack_api import FakeSlack
from tests.harness import wait_for
from tests.slack.conftest import SlackBridge

REPO = "acme/payments-api"
SHA = "3f2c1a9d0b7e6f5a4c3b2a1908f7e6d5c4b3a291"


def app_source(github: FakeGitHub, **extra: Any) -> dict[str, Any]:
    return {"type": "github", "api_url": github.api_url, "app_id": APP_ID, "private_key": github.private_key,
            "webhook_secret": WEBHOOK_SECRET, "timeout": "2s", "max_wait": "5s", **extra}


def a_run(github: FakeGitHub, run_id: int = 101, actor: str = "ana") -> Run:
    return github.add_run(Run(run_id, REPO, SHA, actor=actor, gates={"production": 1}),
                          deployed_before="a" * 40,
                          commits=[("ana", "Fix rounding"), ("bo", "Add refunds"), ("ana", "Bump"), ("bo", "Docs")])


async def send(b: SlackBridge, event: str, payload: dict[str, Any], **kw: Any) -> httpx.Response:
    body, headers = FakeGitHub.webhook(event, payload, **kw)
    return await b.http.post(f"{b.daemon.base_url}/v1/sources/github/webhook", content=body, headers=headers)


async def requested(b: SlackBridge, github: FakeGitHub, run: Run) -> Request:
    response = await send(b, "deployment_protection_rule", github.protection_rule_payload(run, "production"))
    assert response.status_code == 202, response.text
    return await b.stored(response.json()["id"])


async def test_approve_in_slack_approves_the_run_with_the_comment(
        tmp_path: Path, slack: FakeSlack, github: FakeGitHub) -> None:
    run = a_run(github)
    async with deploy_bridge(tmp_path, slack, app_source(github)) as b:
        request = await requested(b, github, run)
        assert request.title == "Deploy payments-api@3f2c1a9 to production — 4 commits by ana, bo"
        assert request.labels == {"repo": REPO, "environment": "production"}
        assert request.requested_by == "github:ana" and request.route == "prod"
        assert request.context["links"]["Workflow run"].endswith(f"/{REPO}/actions/runs/101")
        message = await b.message_of(request.id)
        assert (await b.person.as_user("U0BOB").click(message, "hitl:approve")).status_code == 200
        await wait_for(lambda: github.reviews, 10)
        (review,) = github.reviews
        assert (review.run_id, review.environment, review.state) == (101, "production", "approved")
        assert "Approved by bo via slack" in review.comment and request.id in review.comment
        assert github.tokens[review.token] == 77 and github.tokens_sold == 1  # an installation token
        # a second deploy of the same installation reuses the cached token
        second = github.add_run(Run(102, REPO, SHA, gates={"production": 1}))
        other = await requested(b, github, second)
        await b.person.as_user("U0BOB").click(await b.message_of(other.id), "hitl:approve")
        await wait_for(lambda: len(github.reviews) == 2, 10)
        assert github.tokens_sold == 1


async def test_reject_sends_the_reason(tmp_path: Path, slack: FakeSlack, github: FakeGitHub) -> None:
    run = a_run(github)
    async with deploy_bridge(tmp_path, slack, app_source(github)) as b:
        request = await requested(b, github, run)
        person = b.person.as_user("U0BOB")
        await person.click(await b.message_of(request.id), "hitl:reject")
        view = await b.latest_view(1)
        await person.submit(view, {"reason": "change freeze until Monday"})
        await wait_for(lambda: github.reviews, 10)
        assert github.reviews[0].state == "rejected"
        assert github.reviews[0].comment.endswith(": change freeze until Monday")


async def test_the_triggering_user_may_not_approve(tmp_path: Path, slack: FakeSlack, github: FakeGitHub) -> None:
    run = a_run(github, actor="ana")
    async with deploy_bridge(tmp_path, slack, app_source(github)) as b:
        request = await requested(b, github, run)
        await b.person.as_user("U0ALICE").click(await b.message_of(request.id), "hitl:approve")  # Ana: github:ana
        (refusal,) = await wait_for(lambda: _refusals(b, request.id), 5)
        assert refusal.data["reason"] == "self-approval" and refusal.actor == "slack:U0ALICE"
        assert (await b.stored(request.id)).is_open and not github.reviews
        # Bo, who did not trigger it, may
        await b.person.as_user("U0BOB").click(await b.message_of(request.id), "hitl:approve")
        await wait_for(lambda: github.reviews, 10)


async def _refusals(b: SlackBridge, rid: str) -> list[Any]:
    return [e for e in await b.daemon.store.list_events(rid) if e.kind == "refused"]


async def test_forged_webhooks_are_refused_and_counted(tmp_path: Path, slack: FakeSlack, github: FakeGitHub) -> None:
    run = a_run(github)
    payload = github.protection_rule_payload(run, "production")
    async with deploy_bridge(tmp_path, slack, app_source(github)) as b:
        url = f"{b.daemon.base_url}/v1/sources/github/webhook"
        wrong = await send(b, "deployment_protection_rule", payload, secret="not-the-secret")
        body, headers = FakeGitHub.webhook("deployment_protection_rule", payload)
        unsigned = await b.http.post(url, content=body, headers={k: v for k, v in headers.items()
                                                                  if k != "X-Hub-Signature-256"})
        tampered = await b.http.post(url, content=body.replace(b"production", b"productiom"), headers=headers)
        sha1 = await b.http.post(url, content=body, headers={**headers, "X-Hub-Signature-256": "sha1=" + "0" * 40})
        assert [r.status_code for r in (wrong, unsigned, tampered, sha1)] == [401] * 4
        assert await b.daemon.store.find_by_external_id("github", "github:acme/payments-api:101:production") is None
        source = b.daemon.service.sources["github"]
        assert "4 webhook(s) refused" in source.problems["webhook"]  # type: ignore[attr-defined]
        metrics = (await b.http.get(f"{b.daemon.base_url}/metrics")).text
        assert 'hitl_source_problems{source="github"} 1.0' in metrics
        ready = (await b.http.get(f"{b.daemon.base_url}/readyz")).text
        assert "4 webhook(s) refused" in ready and WEBHOOK_SECRET not in ready
        assert not github.reviews


async def test_hostile_signed_webhooks_get_clear_errors(tmp_path: Path, slack: FakeSlack, github: FakeGitHub) -> None:
    run = a_run(github)
    async with deploy_bridge(tmp_path, slack, app_source(github)) as b:
        elsewhere = github.protection_rule_payload(run, "production", callback_url="https://evil.example/x")
        r = await send(b, "deployment_protection_rule", elsewhere)
        assert r.status_code == 422 and "deployment_callback_url" in r.text
        no_env = github.protection_rule_payload(run, "production")
        del no_env["environment"]
        r = await send(b, "deployment_protection_rule", no_env)
        assert r.status_code == 422 and "environment" in r.text
        _, headers = FakeGitHub.webhook("ping", {})
        bad = b"[1, 2"
        headers["X-Hub-Signature-256"] = "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), bad, hashlib.sha256).hexdigest()
        r = await b.http.post(f"{b.daemon.base_url}/v1/sources/github/webhook", content=bad, headers=headers)
        assert r.status_code == 400
        r = await send(b, "ping", {"zen": "Keep it logically awesome."})
        assert r.status_code == 202 and "nothing to do" in r.text
        huge = github.protection_rule_payload(run, "production") | {"padding": "x" * 2_000_000}
        r = await send(b, "deployment_protection_rule", huge)
        assert r.status_code == 413
        no_install = github.protection_rule_payload(run, "production")
        del no_install["installation"]
        r = await send(b, "deployment_protection_rule", no_install)
        assert r.status_code == 422 and "installation" in r.text


async def test_a_run_cancelled_in_github_withdraws_the_request(
        tmp_path: Path, slack: FakeSlack, github: FakeGitHub) -> None:
    run = a_run(github)
    async with deploy_bridge(tmp_path, slack, app_source(github)) as b:
        request = await requested(b, github, run)
        run.status = "completed"
        payload = {"action": "completed", "repository": {"full_name": REPO},
                   "workflow_run": {**run.json(github.api_url), "status": "completed", "conclusion": "cancelled"}}
        r = await send(b, "workflow_run", payload)
        assert r.status_code == 202 and r.json()["withdrawn"] == [request.id]
        closed = await b.closed(request.id)
        assert closed.state == "cancelled" and not github.reviews


@pytest.mark.parametrize("primary", [False, True], ids=["retry-after", "x-ratelimit-reset"])
async def test_rate_limited_callback_is_retried_after_retry_after(
        tmp_path: Path, slack: FakeSlack, github: FakeGitHub, caplog: pytest.LogCaptureFixture, primary: bool) -> None:
    run = a_run(github)
    async with deploy_bridge(tmp_path, slack, app_source(github, compare=False)) as b:
        request = await requested(b, github, run)
        github.rate_limit(1, retry_after=1, primary=primary)
        await b.person.as_user("U0BOB").click(await b.message_of(request.id), "hitl:approve")
        await wait_for(lambda: github.reviews, 10)
        assert any(c.path.endswith("/deployment_protection_rule") for c in github.server.calls)
        limited = [c for c in github.server.calls if c.path.endswith("/deployment_protection_rule")]
        assert len(limited) == 2  # the 429, then the call after Retry-After
        token = github.reviews[0].token
        for secret in (token, WEBHOOK_SECRET, github.private_key.splitlines()[1]):
            assert secret not in caplog.text  # nothing secret in the logs, even on a retry


async def test_polling_mode_reviews_pending_deployments(tmp_path: Path, slack: FakeSlack, github: FakeGitHub) -> None:
    token = github.person_token("bo")
    github.add_run(Run(201, REPO, SHA, actor="ana", reviewers={"production": 11}),
                   deployed_before="b" * 40, commits=[("ana", "One")])
    gone = github.add_run(Run(202, REPO, SHA, actor="ana", reviewers={"production": 11}))
    source = {"type": "github", "mode": "poll", "api_url": github.api_url, "token": token,
              "repositories": [REPO], "poll_every": "100ms", "timeout": "2s"}
    async with deploy_bridge(tmp_path, slack, source) as b:
        async def open_ones() -> list[Request]:
            store = b.daemon.store
            found = [await store.get_request(c.args["metadata"]["event_payload"]["request_id"])
                     for c in slack.calls_of("chat.postMessage")]
            return [r for r in found if r is not None and r.is_open]
        found = await wait_for(lambda: _two(open_ones()), 10)
        first = next(r for r in found if r.run_id == "201")
        second = next(r for r in found if r.run_id == "202")
        assert first.title.endswith("1 commit by ana")
        # decided in GitHub first: the wait disappears, the request is withdrawn
        gone.reviewers.clear()
        gone.status = "in_progress"
        assert (await b.closed(second.id)).state == "cancelled"
        await b.person.as_user("U0BOB").click(await b.message_of(first.id), "hitl:approve")
        await wait_for(lambda: github.reviews, 10)
        assert github.reviews[0].state == "approved" and github.reviews[0].token == token


async def _two(found: Any) -> list[Request] | None:
    requests: list[Request] = await found
    return requests if len(requests) == 2 else None


async def test_doctor_checks_the_app_credentials(github: FakeGitHub) -> None:
    section = {k: v for k, v in app_source(github).items() if k != "type"}
    good = GitHubSource(GitHubConfig.model_validate(section))
    (finding,) = await good.doctor()
    assert finding.line().count("hitl-bridge-deploys") == 1
    other = FakeGitHub()
    bad = GitHubSource(GitHubConfig.model_validate({**section, "private_key": other.private_key}))
    (finding,) = await bad.doctor()
    assert "401" in finding.line() and other.private_key not in finding.line()


async def test_a_long_rate_limit_goes_back_to_the_outbox(tmp_path: Path, slack: FakeSlack, github: FakeGitHub) -> None:
    run = a_run(github)
    async with deploy_bridge(tmp_path, slack, app_source(github, compare=False)) as b:
        request = await requested(b, github, run)
        github.rate_limit(1, retry_after=3600)  # past max_wait: not waited for inside the call
        await b.person.as_user("U0BOB").click(await b.message_of(request.id), "hitl:approve")
        await wait_for(lambda: github.reviews, 10)  # the outbox's next attempt
        (retry,) = [e for e in await b.daemon.store.list_events(request.id) if e.kind == "delivery_retry"]
        assert "rate limit" in str(retry.data)
        limited = [c for c in github.server.calls if c.path.endswith("/deployment_protection_rule")]
        assert len(limited) == 2


async def test_a_deployment_that_started_without_us_withdraws_the_request(
        tmp_path: Path, slack: FakeSlack, github: FakeGitHub) -> None:
    run = a_run(github)
    async with deploy_bridge(tmp_path, slack, app_source(github, compare=False)) as b:
        request = await requested(b, github, run)
        other_env = {"action": "created", "repository": {"full_name": REPO}, "workflow_run": {"id": run.id},
                     "deployment": {"environment": "staging"}, "deployment_status": {"state": "in_progress"}}
        assert (await send(b, "deployment_status", other_env)).json()["withdrawn"] == []
        bypassed = {**other_env, "deployment": {"environment": "production"}}  # an admin bypassed the rule
        assert (await send(b, "deployment_status", bypassed)).json()["withdrawn"] == [request.id]
        closed = await b.closed(request.id)
        assert closed.state == "cancelled" and not github.reviews


async def test_a_decision_for_a_run_that_no_longer_waits_fails_with_the_reason(
        tmp_path: Path, slack: FakeSlack, github: FakeGitHub) -> None:
    run = a_run(github)
    async with deploy_bridge(tmp_path, slack, app_source(github, compare=False)) as b:
        request = await requested(b, github, run)
        run.gates.clear()  # decided in GitHub, and its webhook never came
        await b.person.as_user("U0BOB").click(await b.message_of(request.id), "hitl:approve")

        async def failed() -> Request | None:
            stored = await b.stored(request.id)
            return stored if stored.state == "failed" else None
        stored = await wait_for(failed, 10)
        assert "HTTP 422" in (stored.error or "") and "no longer waits" in (stored.error or "")
        assert not github.reviews
