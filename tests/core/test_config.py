from __future__ import annotations

from pathlib import Path

import pytest

from bridge.config import EMBEDDED, load_settings
from bridge.daemon import Daemon
from bridge.errors import ConfigError
from tests.harness import make_settings


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(text)
    return str(path)


def test_embedded_defaults_without_a_file(tmp_path: Path) -> None:
    settings = load_settings(None, env={})
    assert settings.origin == EMBEDDED
    assert settings.http.listen == "127.0.0.1:8787"
    assert settings.store.url == "sqlite:///./.hitl-bridge/bridge.db"
    assert [s["type"] for s in settings.sources] == ["delta", "webhook", "mcp"]
    assert settings.slack is None and settings.telegram is None
    with_tokens = load_settings(None, env={"SLACK_BOT_TOKEN": "xoxb-1", "TELEGRAM_BOT_TOKEN": "1:x"})
    assert with_tokens.slack and with_tokens.slack["bot_token"] == "xoxb-1"
    assert with_tokens.telegram == {"bot_token": "1:x"}


def test_env_substitution_and_overrides(tmp_path: Path) -> None:
    path = write(tmp_path, """
http:
  listen: 127.0.0.1:9000
  api_tokens: ["${TOKEN}", "${UNSET:-}"]
secrets:
  key: "${KEY:-fallback-passphrase}"
routes:
  - match: {source: delta, workspace: "*/deploy-*"}
    notify: ["web"]
    timeout: 2h
""")
    settings = load_settings(path, env={"TOKEN": "t" * 20, "HITL_BRIDGE__HTTP__LISTEN": "127.0.0.1:9100",
                                        "HITL_BRIDGE__HTTP__MAX_BODY_BYTES": "4096"})
    assert {n: t.token for n, t in settings.http.api_tokens.items()} == {"api": "t" * 20}  # the unset one is dropped
    assert settings.http.listen == "127.0.0.1:9100"
    assert settings.http.max_body_bytes == 4096
    assert settings.secrets.key == "fallback-passphrase"
    assert settings.routes[0].timeout is not None and settings.routes[0].timeout.total_seconds() == 7200
    assert settings.routes[0].name == "routes[0]"


def test_an_unset_variable_without_a_default_is_an_error_naming_it_and_the_key(tmp_path: Path) -> None:
    path = write(tmp_path, """
slack:
  bot_token: "${SLACK_BOT_TOKEN}"
  signing_secret: "${SLACK_SIGNING_SECRET}"
routes:
  - notify: ["slack:#deploys"]
""")
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={"SLACK_BOT_TOKEN": ""})  # set but empty counts as unset
    assert info.value.key == "slack.bot_token"
    assert "${SLACK_BOT_TOKEN} is not set" in info.value.reason
    assert "${SLACK_BOT_TOKEN:-}" in info.value.reason  # how to say "optional"
    assert "(also unset: SLACK_SIGNING_SECRET)" in info.value.reason
    path = write(tmp_path, 'routes:\n  - name: a\n    notify: ["web"]\n    match: {team: "${TEAM}"}\n')
    with pytest.raises(ConfigError, match=r"routes\[0\]\.match\.team: \$\{TEAM\} is not set"):
        load_settings(path, env={})
    assert load_settings(path, env={"TEAM": "payments"}).routes[0].match == {"team": "payments"}


def test_config_search_path_finds_the_first_existing_file(tmp_path: Path) -> None:
    from bridge.config import find_config_file

    mounted, baked = tmp_path / "config" / "hitl-bridge.yaml", tmp_path / "etc" / "hitl-bridge.yaml"
    baked.parent.mkdir()
    baked.write_text("log_level: INFO\n")
    env = {"HITL_BRIDGE_CONFIG_PATH": f"{mounted}:{baked}"}
    assert find_config_file(None, env) == baked  # nothing mounted: the image's own file
    mounted.parent.mkdir()
    mounted.write_text("log_level: DEBUG\n")
    assert find_config_file(None, env) == mounted  # a mounted config wins
    assert load_settings(None, env=env).log_level == "DEBUG"
    assert find_config_file(None, {**env, "HITL_BRIDGE_CONFIG": str(baked)}) == baked  # explicit beats the path
    assert find_config_file(str(baked), env) == baked
    assert find_config_file(None, {}) is None  # no ./hitl-bridge.yaml here: embedded defaults


@pytest.mark.parametrize(("text", "key", "reason"), [
    ("htp: {}\n", "htp", "unknown key"),
    ("http: {listen: nowhere}\n", "http.listen", "host:port"),
    ("routes:\n  - remind_every: -5m\n", "routes[0].remind_every", "duration"),
    ("routes:\n  - timeout: soon\n", "routes[0].timeout", "cannot read 'soon'"),
    ("routes:\n  - escalate: [{after: 45m, notify: [web]}, {after: 15m, notify: [web]}]\n",
     "routes[0]", "increasing order"),
    ("routes:\n  - on_timeout: {answer: 'no', fail: true}\n", "routes[0].on_timeout", "exactly one"),
    ("store: {url: 'mysql://x'}\n", "store.url", "sqlite"),
    ("sources: [{roots: [.]}]\n", "sources", "type"),
    ("- just\n- a list\n", "", "mapping"),
    ("http: [unclosed\n", "", "not valid YAML"),
])
def test_bad_config_names_file_key_and_reason(tmp_path: Path, text: str, key: str, reason: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    message = str(info.value)
    assert message.startswith(path)
    assert key in message
    assert reason in message


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_settings(str(tmp_path / "nope.yaml"), env={})


def test_unknown_source_type_named_at_start(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, {"sources": [{"type": "carrier-pigeon"}]})
    with pytest.raises(ConfigError, match=r"sources\[0\].type: unknown type 'carrier-pigeon'"):
        import asyncio

        asyncio.run(Daemon(settings).start(serve_http=False))


async def test_listening_beyond_loopback_needs_tokens(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, {"http": {"listen": "0.0.0.0:0"}})
    with pytest.raises(ConfigError, match="http.listen.*api_tokens"):
        await Daemon(settings).start()


def test_short_api_token_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "http: {api_tokens: [short]}\n")
    with pytest.raises(ConfigError, match="at least 16"):
        load_settings(path, env={})


async def test_port_in_use_is_a_clear_error_and_nothing_leaks(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        settings = make_settings(tmp_path, {"http": {"listen": f"127.0.0.1:{port}"}})
        daemon = Daemon(settings)
        with pytest.raises(OSError, match="could not listen"):
            await daemon.start()
    # the store was closed on the way out: a second daemon can open it at once
    other = Daemon(make_settings(tmp_path))
    await other.start()
    await other.stop()
