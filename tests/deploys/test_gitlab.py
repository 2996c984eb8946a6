"""GitLab deployment approvals end to end: a deployment blocked in a protected environment
(found by polling, or at once on a project webhook) → a bridge request in Slack → clicks →
the deployment approval API of the fake GitLab, as each approving person where they gave
a token. Also: a forged webhook, four-eyes, a decision made in GitLab first, rate limits,
and a two-approval rule the bridge's one token cannot meet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from bridge.models import Request
from tests.deploys.conftest import deploy_bridge
from tests.fakes.gitlab_api import HOOK_SECRET, Deployment, FakeGitLab
from tests.fakes.slack_api import FakeSlack
from tests.harness import wait_for
from tests.slack.conftest import SlackBridge

PROJECT = "acme/payments"
SHA = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d"
TWO_APPROVALS = {"match": {"labels.environment": "production", "labels.approvals": "2"}, "quorum": 2}


async def fake_gitlab() -> FakeGitLab:
    fake = FakeGitLab()
    await fake.server.start()
    return fake


def gitlab_source(gl: FakeGitLab, **extra: Any) -> dict[str, Any]:
    return {"type": "gitlab", "url": gl.url, "token": gl.bot_token, "projects": [PROJECT],
            "webhook_secret": HOOK_SECRET, "poll_every": "1h", "timeout": "2s", **extra}


async def hook(b: SlackBridge, event: str = "Job Hook", token: str = HOOK_SECRET) -> httpx.Response:
    body, headers = FakeGitLab.hook(event, PROJECT, token, build_status="manual")
    return await b.http.post(f"{b.daemon.base_url}/v1/sources/gitlab/webhook", content=body, headers=headers)


async def the_request(b: SlackBridge, deployment_id: int) -> Request:
    async def find() -> Request | None:
        return await b.daemon.store.find_by_external_id("gitlab", f"gitlab:{PROJECT}:{deployment_id}")
    found: Request = await wait_for(find, 10)
    return found


async def test_two_required_approvals_met_by_two_people(tmp_path: Path, slack: FakeSlack) -> None:
    gl = await fake_gitlab()
    try:
        deployment = gl.add(Deployment(11, PROJECT, "production", SHA, user="ana", required=2),
                            deployed_before="c" * 40, commits=[("Ana", "Fix"), ("Bo", "Feature")])
        tokens = {"bo": gl.token_for("bo"), "cy": gl.token_for("cy")}
        source = gitlab_source(gl, approver_tokens=tokens)
        async with deploy_bridge(tmp_path, slack, source, route=TWO_APPROVALS) as b:
            assert (await hook(b)).status_code == 202  # the webhook makes the look happen now
            request = await the_request(b, 11)
            assert request.title == "Deploy payments@9e8d7c6 to production — 2 commits by Ana, Bo"
            assert request.labels["approvals"] == "2" and request.route == "prod"
            assert request.requested_by == "gitlab:ana"
            message = await b.message_of(request.id)
            await b.person.as_user("U0BOB").click(message, "hitl:approve")
            assert (await b.stored(request.id)).is_open  # one vote of two
            assert deployment.approvals == []
            await b.person.as_user("U0MALLORY").click(message, "hitl:approve")  # Cy
            await wait_for(lambda: deployment.status == "created", 10)
            assert sorted(a["user"]["username"] for a in deployment.approvals) == ["bo", "cy"]
            assert all(a["status"] == "approved" and request.id in a["comment"] for a in deployment.approvals)
    finally:
        await gl.server.stop()


async def test_reject_with_the_bridge_token_and_the_reason(tmp_path: Path, slack: FakeSlack) -> None:
    gl = await fake_gitlab()
    try:
        deployment = gl.add(Deployment(12, PROJECT, "production", SHA, user="ana"))
        async with deploy_bridge(tmp_path, slack, gitlab_source(gl)) as b:
            await hook(b)
            request = await the_request(b, 12)
            person = b.person.as_user("U0BOB")
            await person.click(await b.message_of(request.id), "hitl:reject")
            await person.submit(await b.latest_view(1), {"reason": "error budget spent"})
            await wait_for(lambda: deployment.status == "canceled", 10)
            (approval,) = deployment.approvals
            assert approval["user"]["username"] == "hitl-bot" and approval["status"] == "rejected"
            assert approval["comment"].endswith(": error budget spent") and "Rejected by bo" in approval["comment"]
    finally:
        await gl.server.stop()


async def test_forged_webhook_is_refused_and_counted(tmp_path: Path, slack: FakeSlack) -> None:
    gl = await fake_gitlab()
    try:
        gl.add(Deployment(13, PROJECT, "production", SHA, user="ana"))
        async with deploy_bridge(tmp_path, slack, gitlab_source(gl)) as b:
            assert (await hook(b, token="wrong-token-0123456789")).status_code == 401
            body, headers = FakeGitLab.hook("Job Hook", PROJECT)
            del headers["X-Gitlab-Token"]
            url = f"{b.daemon.base_url}/v1/sources/gitlab/webhook"
            assert (await b.http.post(url, content=body, headers=headers)).status_code == 401
            source = b.daemon.service.sources["gitlab"]
            assert "2 webhook(s) refused" in source.problems["webhook"]  # type: ignore[attr-defined]
            garbage = await b.http.post(url, content=b"{not json", headers={**headers, "X-Gitlab-Token": HOOK_SECRET})
            assert garbage.status_code == 400
            other = FakeGitLab.hook("Job Hook", "someone/else")
            assert "nothing to do" in (await b.http.post(url, content=other[0], headers=other[1])).text
    finally:
        await gl.server.stop()


async def test_triggering_user_refused_and_a_decision_in_gitlab_withdraws(tmp_path: Path, slack: FakeSlack) -> None:
    gl = await fake_gitlab()
    try:
        deployment = gl.add(Deployment(14, PROJECT, "production", SHA, user="ana"))
        async with deploy_bridge(tmp_path, slack, gitlab_source(gl)) as b:
            await hook(b)
            request = await the_request(b, 14)
            await b.person.as_user("U0ALICE").click(await b.message_of(request.id), "hitl:approve")  # Ana
            events = await b.daemon.store.list_events(request.id)
            assert any(e.kind == "refused" and e.data.get("reason") == "self-approval" for e in events)
            assert (await b.stored(request.id)).is_open and deployment.approvals == []
            deployment.status = "created"  # approved in GitLab's own page
            await hook(b, "Deployment Hook")
            assert (await b.closed(request.id)).state == "cancelled"
            assert deployment.approvals == []
    finally:
        await gl.server.stop()


async def test_rate_limited_approval_waits_for_retry_after(tmp_path: Path, slack: FakeSlack) -> None:
    gl = await fake_gitlab()
    try:
        deployment = gl.add(Deployment(15, PROJECT, "production", SHA, user="ana"))
        async with deploy_bridge(tmp_path, slack, gitlab_source(gl, compare=False)) as b:
            await hook(b)
            request = await the_request(b, 15)
            gl.rate_limit(1, retry_after=1)
            await b.person.as_user("U0BOB").click(await b.message_of(request.id), "hitl:approve")
            await wait_for(lambda: deployment.status == "created", 10)
            limited = [c for c in gl.server.calls if "/deployments/15" in c.path]
            assert gl.limited == 0 and len(limited) >= 4  # the 429'd read, its retry, the approval, the read after
    finally:
        await gl.server.stop()


async def test_one_token_cannot_meet_two_approvals_and_says_so(tmp_path: Path, slack: FakeSlack) -> None:
    gl = await fake_gitlab()
    try:
        deployment = gl.add(Deployment(16, PROJECT, "production", SHA, user="ana", required=2))
        async with deploy_bridge(tmp_path, slack, gitlab_source(gl, compare=False), route=TWO_APPROVALS) as b:
            await hook(b)
            request = await the_request(b, 16)
            message = await b.message_of(request.id)
            await b.person.as_user("U0BOB").click(message, "hitl:approve")
            await b.person.as_user("U0MALLORY").click(message, "hitl:approve")
            failed = await wait_for(lambda: _failed(b, request.id), 10)
            assert "the bridge's token counts once" in (failed.error or "")
            assert [a["user"]["username"] for a in deployment.approvals] == ["hitl-bot"]
            assert deployment.status == "blocked"
    finally:
        await gl.server.stop()


async def _failed(b: SlackBridge, rid: str) -> Request | None:
    request = await b.stored(rid)
    return request if request.state == "failed" else None


async def test_doctor_checks_every_token_and_names_none(tmp_path: Path) -> None:
    from adapters.gitlab.settings import GitLabConfig
    from adapters.gitlab.source import GitLabSource

    gl = await fake_gitlab()
    try:
        good = gl.token_for("bo")
        section = {k: v for k, v in gitlab_source(gl).items() if k != "type"}
        source = GitLabSource(GitLabConfig.model_validate(
            {**section, "approver_tokens": {"bo": good, "cy": "glpat-revoked-0123"}}))
        lines = [f.line() for f in await source.doctor()]
        assert "answers as hitl-bot" in lines[0] and "answers as bo" in lines[1]
        assert "401" in lines[2] and "approver_tokens.cy" in lines[2]
        assert not any(t in line for line in lines for t in (gl.bot_token, good, "glpat-revoked-0123"))
    finally:
        await gl.server.stop()


async def test_a_retry_after_a_lost_reply_is_not_a_failure(tmp_path: Path, slack: FakeSlack) -> None:
    gl = await fake_gitlab()
    try:
        deployment = gl.add(Deployment(17, PROJECT, "production", SHA, user="ana"))
        async with deploy_bridge(tmp_path, slack, gitlab_source(gl, compare=False)) as b:
            await hook(b)
            request = await the_request(b, 17)
            # an earlier attempt's approval landed in GitLab, but its reply was lost
            deployment.approvals.append({"user": {"username": "hitl-bot"}, "status": "approved",
                                         "comment": f"Approved by bo via slack (hitl-bridge {request.id})"})
            deployment.status = "created"
            await b.person.as_user("U0BOB").click(await b.message_of(request.id), "hitl:approve")
            await wait_for(lambda: _delivered(b, request.id), 15)
            assert len(deployment.approvals) == 1  # not approved twice, and not marked failed
    finally:
        await gl.server.stop()


async def _delivered(b: SlackBridge, rid: str) -> bool:
    return (await b.stored(rid)).state == "delivered"
