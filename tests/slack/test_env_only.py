"""Slack set up by the environment alone: SLACK_BOT_TOKEN without its second secret is refused
naming the environment variables (SLACK_SIGNING_SECRET for HTTP mode, SLACK_APP_TOKEN for
Socket Mode) as well as the YAML keys; with one of them plus SLACK_CHANNEL the default route
notifies that channel."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.config import load_settings
from bridge.errors import ConfigError
from bridge.preflight import check_config

BOT = "xoxb-0000-test-token"


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HITL_BRIDGE_CONFIG_PATH": str(tmp_path / "none.yaml"), "SLACK_BOT_TOKEN": BOT,
            "HITL_BRIDGE__STORE__URL": f"sqlite:///{tmp_path}/bridge.db", "HITL_BRIDGE__SOURCES": "[{type: webhook}]",
            **extra}


def test_the_bot_token_alone_names_the_env_vars_to_set(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        check_config(load_settings(None, env(tmp_path)))
    message = str(raised.value)
    assert "SLACK_SIGNING_SECRET" in message and "SLACK_APP_TOKEN" in message, message
    assert "slack.signing_secret" in message and "slack.app_token" in message, message
    assert BOT not in message


@pytest.mark.parametrize("second", [{"SLACK_APP_TOKEN": "xapp-1-test"}, {"SLACK_SIGNING_SECRET": "s" * 32}])
def test_a_second_secret_and_slack_channel_are_a_complete_set_up(tmp_path: Path, second: dict[str, str]) -> None:
    settings = load_settings(None, env(tmp_path, SLACK_CHANNEL="#deploys", **second))
    assert settings.default_route.notify == ["web", "slack:#deploys"]
    assert "channels: web, slack" in check_config(settings)
