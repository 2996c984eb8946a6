"""A Slack token refused at start or later: /readyz 503 with Slack's error and the fix, a log
line and a metric for each failed post, recovery when a call succeeds again; `doctor`
asks Slack (auth.test, scopes, channel membership) and names each problem with its fix."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge import cli
from bridge.config import Settings
from bridge.doctor import diagnose, exit_code, render_text
from tests.fakes.slack_api import FakeSlack
from tests.harness import make_settings, running_bridge
from tests.slack.conftest import SIGNING_SECRET, confirm_body, slack_section


def metric(text: str, line_start: str) -> float:
    return next(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start))


async def test_a_refused_token_makes_the_daemon_not_ready_and_every_failed_post_visible(
        tmp_path: Path, fake: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    config = {"slack": {**slack_section(fake), "bot_token": "xoxb-wrong-token"},
              "routes": [{"name": "deploys", "notify": ["slack:#deploys"]}]}
    async with running_bridge(tmp_path, config) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as http:
        ready = await http.get("/readyz")
        assert ready.status_code == 503
        body = ready.json()
        assert body["reasons"] == ["channel:slack: Slack refused the bot token (invalid_auth)"]
        check = next(c for c in body["checks"] if c["component"] == "channel:slack")
        assert check["status"] == "failing" and "slack.bot_token" in check["fix"]
        assert (await http.get("/healthz")).status_code == 200  # liveness only

        rid = (await http.post("/v1/requests", json=confirm_body())).json()["id"]
        await daemon.service.drain()
        failed = f"request {rid} not posted to slack:#deploys: chat.postMessage to slack:#deploys failed: invalid_auth"
        assert failed in caplog.text
        assert "xoxb-wrong-token" not in caplog.text
        text = (await http.get("/metrics")).text
        assert metric(text, 'hitl_posts_total{channel="slack",result="error"}') == 1
        assert metric(text, 'hitl_health_status{component="channel:slack",status="failing"}') == 1
        assert metric(text, "hitl_ready ") == 0

        fake.bot_token = "xoxb-wrong-token"  # the workspace takes the token again (reinstalled app)
        rid2 = (await http.post("/v1/requests", json=confirm_body())).json()["id"]
        await daemon.service.drain()
        assert f"request {rid2} posted to slack:#deploys" in caplog.text
        assert "channel:slack recovered: Slack calls succeed again" in caplog.text
        assert (await http.get("/readyz")).status_code == 200
        text = (await http.get("/metrics")).text
        assert metric(text, 'hitl_posts_total{channel="slack",result="ok"}') == 1


async def test_a_token_revoked_while_running_turns_the_channel_failing(tmp_path: Path, fake: FakeSlack) -> None:
    config = {"slack": slack_section(fake, max_attempts=1), "routes": [{"notify": ["slack:#deploys"]}]}
    async with running_bridge(tmp_path, config) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as http:
        assert (await http.get("/readyz")).status_code == 200
        assert daemon.service.health.current("channel:slack").summary == "connected as @bridge in Fake"
        fake.bot_token = "xoxb-rotated"  # revoked: every call now answers invalid_auth
        await http.post("/v1/requests", json=confirm_body())
        await daemon.service.drain()
        ready = await http.get("/readyz")
        assert ready.status_code == 503 and "Slack refused the bot token (invalid_auth)" in ready.text


def doctor_settings(tmp_path: Path, fake: FakeSlack, **extra: Any) -> Settings:
    return make_settings(tmp_path, {"slack": slack_section(fake), "http": {"listen": "127.0.0.1:1"}, **extra})


async def test_doctor_checks_token_scopes_and_membership(tmp_path: Path) -> None:
    channels = {"deploys": "C0DEPLOYS", "incidents": "C0INCIDENTS", "old": "C0OLD", "secret": "C0SECRET"}
    async with FakeSlack(channels=channels, scopes={"chat:write", "channels:read", "users:read"}) as fake:
        fake.outside = {"C0INCIDENTS", "C0SECRET"}
        fake.private = {"C0SECRET"}
        fake.archived = {"C0OLD"}
        settings = doctor_settings(tmp_path, fake, routes=[{"name": "deploys", "notify": [
            "slack:#deploys", "slack:#incidents", "slack:C0OLD", "slack:#secret", "slack:@U0ALICE"]}])
        lines = render_text(await diagnose(settings)).splitlines()
    slack = [line for line in lines if line.split("] ", 1)[1].startswith("slack")]
    assert slack == [
        "[ok] slack auth: @bridge (bot B0BRIDGE) in Fake (T0FAKE)",
        "[FAIL] slack scopes: the token lacks im:write (needed for DM targets (slack:@U…, and each member of a "
        "slack:@group)) — fix: add it under OAuth & Permissions → Bot Token Scopes, reinstall the app to the "
        "workspace, and put the new xoxb- token in slack.bot_token",
        "[warn] slack scopes: the token lacks channels:history (used to find its own post after a timeout instead "
        "of posting twice) — fix: add it under OAuth & Permissions → Bot Token Scopes, reinstall the app to the "
        "workspace, and put the new xoxb- token in slack.bot_token",
        "[ok] slack:#deploys: the bot is a member of #deploys (C0DEPLOYS)",
        "[FAIL] slack:#incidents: the bot is not a member of #incidents: posts fail with not_in_channel — fix: "
        "/invite the bot to #incidents (in Slack: open #incidents, type /invite @<bot name>)",
        "[FAIL] slack:C0OLD: #old is archived — fix: unarchive it or point the route elsewhere",
        "[FAIL] slack:#secret: no channel #secret the bot can see (a private channel the bot is not in, a renamed "
        "or archived channel?) — fix: create it, or /invite the bot to #secret if it is private",
        "[ok] slack:@U0ALICE: DM to @alice",
    ]


async def test_doctor_with_everything_right_passes_and_names_the_refused_token(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with FakeSlack() as fake:
        settings = doctor_settings(tmp_path, fake, routes=[{"notify": ["slack:#deploys", "slack:@oncall-group"],
                                                            "responders": ["slack:@oncall-group"]}])
        findings = await diagnose(settings)
        assert exit_code(findings) == 0, render_text(findings)
        text = render_text(findings)
        assert "[ok] slack scopes: chat:write, im:write, usergroups:read granted" in text
        assert "[ok] slack:@oncall-group: user group with 1 member(s), each gets a DM" in text

        path = tmp_path / "wrong.yaml"
        path.write_text(f"slack: {{bot_token: xoxb-wrong, signing_secret: {SIGNING_SECRET}, "
                        f"api_url: '{fake.api_url}'}}\nhttp: {{listen: '127.0.0.1:1'}}\n"
                        f"store: {{url: 'sqlite:///{tmp_path}/d.db'}}\nroutes: [{{notify: ['slack:#deploys']}}]\n")
        code = await asyncio.to_thread(run_cli, ["doctor", "-c", str(path)])
    out = capsys.readouterr().out
    assert code == 1
    assert ("[FAIL] slack auth: Slack refused the bot token (invalid_auth) — fix: put the app's Bot User OAuth "
            "Token (xoxb-…, from the app's OAuth & Permissions page) in slack.bot_token and restart") in out
    assert "xoxb-wrong" not in out


async def test_doctor_checks_the_socket_mode_app_token(tmp_path: Path, fake: FakeSlack) -> None:
    settings = doctor_settings(tmp_path, fake, slack={**slack_section(fake), "app_token": "xapp-wrong"},
                               routes=[{"notify": ["slack:#deploys"]}])
    lines = render_text(await diagnose(settings)).splitlines()
    assert ("[FAIL] slack app token: Slack refused the app token (invalid_auth) — fix: put an app-level token "
            "(xapp-…, scope connections:write, from the app's Basic Information page) in slack.app_token and "
            "restart") in lines
    fake.app_token = "xapp-wrong"
    assert "[ok] slack app token: Socket Mode can connect" in render_text(await diagnose(settings))


def run_cli(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    return int(info.value.code or 0)


async def test_the_fake_checks_scopes_and_membership_like_slack(fake: FakeSlack) -> None:
    from slack_sdk.errors import SlackApiError
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    response = await client.auth_test()
    assert set(response.headers["x-oauth-scopes"].split(",")) >= {"chat:write", "im:write"}
    fake.scopes.discard("im:write")
    with pytest.raises(SlackApiError) as info:
        await client.conversations_open(users="U0ALICE")
    assert info.value.response["error"] == "missing_scope" and info.value.response["needed"] == "im:write"
    fake.outside.add("C0DEPLOYS")
    with pytest.raises(SlackApiError) as info:
        await client.chat_postMessage(channel="#deploys", text="hi")
    assert info.value.response["error"] == "not_in_channel"
    fake.scopes.add("chat:write.public")
    assert (await client.chat_postMessage(channel="#deploys", text="hi"))["ok"]
    listed = await client.conversations_list(limit=1)
    assert len(listed["channels"]) == 1 and listed["response_metadata"]["next_cursor"] == "1"
