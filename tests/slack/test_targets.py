"""The `slack:` target syntax of DESIGN §4."""

from __future__ import annotations

import pytest

from adapters.slack.targets import BadTarget, SlackTarget, parse_target


@pytest.mark.parametrize(("target", "expected"), [
    ("slack:#deploys", SlackTarget("channel", "#deploys")),
    ("slack:C0123ABC", SlackTarget("channel", "C0123ABC")),
    ("slack:@U0MANAGER", SlackTarget("user", "U0MANAGER")),
    ("slack:@W0ENTERPRISE", SlackTarget("user", "W0ENTERPRISE")),
    ("slack:U0123ABC", SlackTarget("user", "U0123ABC")),
    ("slack:@oncall-group", SlackTarget("usergroup", "oncall-group")),
])
def test_targets(target: str, expected: SlackTarget) -> None:
    assert parse_target(target) == expected


@pytest.mark.parametrize("target", ["telegram:1", "slack:", "slack:#", "slack:@", "slack:lower",
                                    "slack:#bad name", "slack:@" + "x" * 200])
def test_bad_targets(target: str) -> None:
    with pytest.raises(BadTarget):
        parse_target(target)


def test_example_config_builds_the_slack_channel() -> None:
    from pathlib import Path

    from adapters.slack import build_channel
    from bridge.config import load_settings
    from bridge.registry import AdapterContext
    from bridge.store.base import Store

    config = Path(__file__).resolve().parents[2] / "config" / "deploy-approvals-slack.yaml"
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s" * 32, "BRIDGE_SECRET_KEY": "k" * 32}
    settings = load_settings(str(config), env)
    assert settings.slack is not None
    store: Store = None  # type: ignore[assignment]  # not touched while building
    ctx = AdapterContext(settings, store, clock=None, key="slack")  # type: ignore[arg-type]
    channel = build_channel(settings.slack, ctx)
    assert not channel.settings.socket_mode and [getattr(r, "path", None) for r in channel.http_routes()] == [
        "/slack/events"]
    assert "xoxb-1" not in repr(channel.settings)


def test_slack_section_errors_name_the_key() -> None:
    from adapters.slack import build_channel
    from bridge.config import Settings
    from bridge.errors import ConfigError
    from bridge.registry import AdapterContext

    ctx = AdapterContext(Settings(), None, None, "slack")  # type: ignore[arg-type]
    for section, needle in (({"bot_token": "xoxp-user"}, "slack.bot_token"),
                            ({"bot_token": "xoxb-1"}, "signing_secret"),
                            ({"bot_token": "xoxb-1", "signing_secret": "s", "colour": 1}, "slack.colour"),
                            ({"bot_token": "xoxb-1", "app_token": "xoxb-2"}, "xapp")):
        with pytest.raises(ConfigError, match=needle):
            build_channel(section, ctx)
