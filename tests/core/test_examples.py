"""Every example in config/ loads, and every target it names has a configured channel."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.clock import SystemClock
from bridge.config import load_settings
from bridge.preflight import check_config, target_errors
from bridge.registry import build_channels, build_sources
from bridge.store.sqlite import SQLiteStore

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "config").glob("*.yaml"))
ENV = {"SLACK_BOT_TOKEN": "xoxb-example", "SLACK_SIGNING_SECRET": "example-signing-secret",
       "TELEGRAM_BOT_TOKEN": "123456:example", "SMTP_URL": "smtp://agents:pw@127.0.0.1:2525",
       "TELEGRAM_WEBHOOK_SECRET": "example_secret",
       "BRIDGE_API_TOKEN": "example-token-0123456789", "BRIDGE_SECRET_KEY": "example-passphrase",
       "INBOX_PASSWORD": "example-password-123", "CI_TOKEN": "ci-example-token-0123456",
       "ANA_TOKEN": "ana-example-token-012345", "RELAY_TOKEN": "relay-example-token-0123",
       "ONCALL_INBOX_TOKEN": "oncall-token-0123456789abcdef",
       "HITL_BRIDGE_DATABASE_URL": "postgresql://hitl@db.example:5432/hitl",
       "RELEASE_BOT_TOKEN": "release-bot-token-0123456789",
       "ANA_INBOX_TOKEN": "ana-inbox-token-0123456789", "BO_INBOX_TOKEN": "bo-inbox-token-0123456789",
       "BRIDGE_AUDIT_TOKEN": "audit-example-token-012345",
       "GITHUB_APP_ID": "123456", "GITHUB_APP_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----\nexample",
       "GITHUB_WEBHOOK_SECRET": "github-webhook-secret-0123456789", "GITLAB_TOKEN": "glpat-example-0123456789",
       "GITLAB_WEBHOOK_SECRET": "gitlab-webhook-secret-0123456789", "ANA_GITLAB_TOKEN": "glpat-ana-0123456789",
       "BO_GITLAB_TOKEN": "glpat-bo-0123456789", "GITHUB_TOKEN": "ghp_example",
       "TEAMS_APP_ID": "00000000-0000-0000-0000-000000000001", "TEAMS_APP_PASSWORD": "teams-app-password-0123456789",
       "TEAMS_TENANT_ID": "00000000-0000-0000-0000-000000000002"}


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
async def test_example_loads_and_targets_have_channels(path: Path, tmp_path: Path) -> None:
    settings = load_settings(str(path), env={**ENV, "HITL_BRIDGE__STORE__URL": f"sqlite:///{tmp_path}/b.db"})
    store = SQLiteStore(tmp_path / "b.db")
    await store.open()
    try:
        channels = build_channels(settings, store, SystemClock())
        build_sources(settings, store, SystemClock())
        assert target_errors(settings, channels) == []
        assert check_config(settings).startswith(f"{path}: ok")
    finally:
        await store.close()
