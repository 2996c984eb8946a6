"""Telegram set up by the environment alone, as the quick start says: TELEGRAM_BOT_TOKEN plus
TELEGRAM_CHAT_ID sends requests to that chat (the default route's target); the token alone
starts Telegram with nothing ever sent there, which is a warning at start and in doctor."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from bridge.config import load_settings
from bridge.doctor import diagnose
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import running_bridge
from tests.telegram.helpers import confirm, submit

UNREACHED = "telegram is on but no route notifies it: set TELEGRAM_CHAT_ID or add a route"


def env_only(tmp_path: Path, fake: FakeTelegram, **extra: str) -> dict[str, str]:
    """No config file: the embedded defaults, chat from the environment; the fake's API URL and a
    store in tmp_path through the documented HITL_BRIDGE__* overrides."""
    return {"HITL_BRIDGE_CONFIG_PATH": str(tmp_path / "none.yaml"), "TELEGRAM_BOT_TOKEN": fake.token,
            "HITL_BRIDGE__TELEGRAM__API_URL": fake.api_url, "HITL_BRIDGE__TELEGRAM__PER_CHAT_INTERVAL": "0",
            "HITL_BRIDGE__STORE__URL": f"sqlite:///{tmp_path}/bridge.db",
            "HITL_BRIDGE__HTTP__LISTEN": "127.0.0.1:0",
            "HITL_BRIDGE__SOURCES": json.dumps([{"type": "webhook"}]), **extra}


async def test_token_and_chat_id_are_a_complete_set_up(tmp_path: Path, fake: FakeTelegram,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    fake.person(42, "Ann")
    settings = load_settings(None, env_only(tmp_path, fake, TELEGRAM_CHAT_ID="42"))
    assert settings.default_route.notify == ["web", "telegram:42"]
    with caplog.at_level(logging.WARNING):
        async with running_bridge(tmp_path, settings=settings) as daemon:
            await submit(daemon, confirm("Deploy from the env?"))
            sent = await fake.wait_for(lambda: fake.sent_to(42))
            assert "Deploy from the env?" in json.dumps(sent)
    assert not any("no route notifies" in r.getMessage() for r in caplog.records)


async def test_the_token_alone_is_a_warning_at_start_and_in_doctor(tmp_path: Path, fake: FakeTelegram,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    settings = load_settings(None, env_only(tmp_path, fake))
    assert settings.default_route.notify == ["web"]
    with caplog.at_level(logging.WARNING):
        async with running_bridge(tmp_path, settings=settings):
            pass
    assert UNREACHED in [r.getMessage() for r in caplog.records]
    findings = await diagnose(settings, daemon_url="http://127.0.0.1:1", timeout_s=2)
    assert any(f.status == "warn" and f.detail == UNREACHED for f in findings), findings


def test_routes_in_a_config_file_win(tmp_path: Path, fake: FakeTelegram) -> None:
    config = tmp_path / "hitl-bridge.yaml"
    config.write_text("telegram: {bot_token: '${TELEGRAM_BOT_TOKEN}'}\nroutes:\n  - notify: ['telegram:7']\n")
    settings = load_settings(str(config), {"TELEGRAM_BOT_TOKEN": fake.token, "TELEGRAM_CHAT_ID": "42"})
    assert settings.default_route.notify == ["web"] and settings.routes[0].notify == ["telegram:7"]
