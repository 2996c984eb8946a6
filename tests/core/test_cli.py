"""The CLI against the store, and against a running daemon's API."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from bridge import cli
from tests.harness import running_bridge, wait_for


def write_config(tmp_path: Path, port: int = 1) -> str:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(f"store: {{url: 'sqlite:///{tmp_path}/bridge.db'}}\nhttp: {{listen: '127.0.0.1:{port}'}}\n"
                    "sources: [{type: webhook}]\n")
    return str(path)


def run(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    return int(info.value.code or 0)


async def test_cli_against_running_daemon(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = {"store": {"url": f"sqlite:///{tmp_path}/bridge.db"}}
    async with running_bridge(tmp_path, config) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        path = write_config(tmp_path, bridge.port)
        rid = (await client.post("/v1/requests", json={
            "title": "Pick", "questions": [{"id": "env", "kind": "choice", "prompt": "Where?",
                                            "options": ["staging", "prod"]}]})).json()["id"]
        code = await asyncio.to_thread(run, ["-c", path, "answer", rid, "moon"])
        assert code == 2 and "expected one of ['staging', 'prod']" in capsys.readouterr().err
        code = await asyncio.to_thread(run, ["-c", path, "answer", rid, "prod", "--as", "ana"])
        assert code == 0
        data = (await client.get(f"/v1/requests/{rid}")).json()
        assert data["answer"]["values"] == {"env": "prod"} and data["answer"]["responder"]["name"] == "ana"
        capsys.readouterr()
        assert await asyncio.to_thread(run, ["-c", path, "show", rid]) == 0
        shown = capsys.readouterr().out
        assert "route      default → web" in shown and "answered" in shown and "timeline" in shown
        assert await asyncio.to_thread(run, ["-c", path, "list", "--state", "delivered", "--state", "answered"]) == 0
        assert rid in capsys.readouterr().out
        code = await asyncio.to_thread(run, ["-c", path, "cancel", rid])
        assert code == 1 and "already" in capsys.readouterr().err


async def test_cli_without_daemon_acts_on_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = {"store": {"url": f"sqlite:///{tmp_path}/bridge.db"}}
    async with running_bridge(tmp_path, config) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        rid = (await client.post("/v1/requests", json={
            "title": "Secret", "questions": [{"id": "a", "kind": "confirm", "prompt": "ok?"},
                                             {"id": "b", "kind": "text", "prompt": "why?"}]})).json()["id"]
        await wait_for(lambda: bridge.store.list_posts(rid))
    path = write_config(tmp_path, 1)  # nothing listens on port 1
    assert await asyncio.to_thread(run, ["-c", path, "answer", rid, "yes"]) == 2
    assert "pass --question" in capsys.readouterr().err
    assert await asyncio.to_thread(run, ["-c", path, "answer", rid, "yes", "-q", "nope"]) == 2
    assert await asyncio.to_thread(run, ["-c", path, "cancel", rid, "--reason", "dup"]) == 0
    assert "cancelled" in capsys.readouterr().out
    assert await asyncio.to_thread(run, ["-c", path, "show", "r_missing"]) == 1
    assert await asyncio.to_thread(run, ["-c", path, "doctor"]) == 0
    out = capsys.readouterr().out
    assert "[ok] store" in out and "[--] daemon: not running" in out


def test_cli_bad_config_exits_2_with_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("routes:\n  - quorum: 0\n")
    assert run(["-c", str(path), "list"]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml: routes[0].quorum" in err


def test_doctor_and_check_config_refuse_targets_without_channel(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"store: {{url: 'sqlite:///{tmp_path}/b.db'}}\nhttp: {{listen: '127.0.0.1:1'}}\n"
                    "routes:\n  - match: {source: delta}\n    notify: ['slack:#deploys', '#ops']\n")
    assert run(["doctor", "-c", str(path)]) == 1  # --config after the verb works too
    out = capsys.readouterr().out
    assert ("[FAIL] slack:#deploys: has no configured channel (configured channels: web), named in "
            "routes[0].notify — fix: add a slack: section with bot_token and signing_secret (or app_token)") in out
    assert "[FAIL] #ops: names no channel (configured channels: web), named in routes[0].notify — fix: " \
           "write slack:#ops" in out
    assert run(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"config error: {path}: routes[0].notify: target 'slack:#deploys' has no configured "
                          "channel") and "(and 1 more target(s) without a channel)" in err
    good = tmp_path / "good.yaml"
    good.write_text("routes:\n  - notify: [web]\n")
    assert run(["check-config", str(good)]) == 0
    assert capsys.readouterr().out.strip() == f"{good}: ok — 1 route(s); channels: web; sources: webhook"
    assert run(["--config", str(good), "check-config"]) == 0


async def test_serve_refuses_a_target_without_channel(tmp_path: Path) -> None:
    from bridge.daemon import Daemon
    from bridge.errors import ConfigError
    from tests.harness import make_settings

    settings = make_settings(tmp_path, {"routes": [{"notify": ["web"], "escalate": [
        {"after": "5m", "notify": ["telegram:42"]}]}]})
    with pytest.raises(ConfigError) as info:
        await Daemon(settings).start()
    assert info.value.key == "routes[0].escalate[0].notify"
    assert "target 'telegram:42' has no configured channel" in info.value.reason


def test_doctor_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    path = write_config(tmp_path)
    assert run(["doctor", "--json", "-c", path]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is True
    checks = {c["check"]: c for c in body["checks"]}
    assert checks["store"]["status"] == "ok" and "writable" in checks["store"]["detail"]
    assert checks["daemon"]["status"] == "info"


def test_doctor_warns_of_a_chat_section_switched_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"store: {{url: 'sqlite:///{tmp_path}/b.db'}}\nhttp: {{listen: '127.0.0.1:1'}}\n"
                    "slack: {bot_token: '${SLACK_BOT_TOKEN:-}', signing_secret: s}\n")
    assert run(["doctor", "-c", str(path)]) == 0  # optional by its `:-`: a warning, not a failure
    assert ("[warn] channels: the slack: section's bot_token is empty, so Slack is off — fix: set it, or remove "
            "the section") in capsys.readouterr().out
