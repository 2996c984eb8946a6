"""The CLI in-process: the daemon's address, offline admin work on the store, config errors,
doctor and check-config, help for every verb, completion scripts, registering a verb.
(The CLI against a daemon started elsewhere, as a child process: tests/cli/.)"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from bridge import cli
from bridge.cli.exits import Failed
from bridge.cli.remote import daemon_address
from tests.harness import running_bridge, wait_for

HITL_BIN = Path(sys.executable).parent


def write_config(tmp_path: Path, port: int = 1) -> str:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(f"store: {{url: 'sqlite:///{tmp_path}/bridge.db'}}\nhttp: {{listen: '127.0.0.1:{port}'}}\n"
                    "sources: [{type: webhook}]\n")
    return str(path)


def test_the_daemon_is_found_by_flag_then_env_then_config(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("http: {listen: '0.0.0.0:9100', api_tokens: {ops: ops-token-0123456789}}\n")
    env = {"HITL_BRIDGE_URL": "http://env.example:8787/", "HITL_BRIDGE_TOKEN": "env-token"}
    flag = daemon_address("https://flag.example", "flag-token", config=str(config), env=env)
    assert (flag.url, flag.token, flag.origin) == ("https://flag.example", "flag-token", "--url")
    from_env = daemon_address(config=str(config), env=env)
    assert (from_env.url, from_env.token, from_env.origin) == ("http://env.example:8787", "env-token",
                                                               "HITL_BRIDGE_URL")
    own = daemon_address(config=str(config), env={})
    assert (own.url, own.token, own.origin) == ("http://127.0.0.1:9100", "ops-token-0123456789",
                                                f"http.listen in {config}")
    elsewhere = daemon_address("http://other.example:8787", config=str(config), env={})
    assert elsewhere.token is None  # the config's token never goes to an address typed by hand
    assert "ops-token" not in repr(own) and "token=set" in repr(own)
    with pytest.raises(Failed, match="must start with http:// or https://"):
        daemon_address("bridge.example:8787", env={})


async def test_offline_works_on_the_store_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = {"store": {"url": f"sqlite:///{tmp_path}/bridge.db"}}
    async with running_bridge(tmp_path, config) as bridge:
        from hitl_bridge_client import AsyncClient

        async with AsyncClient(bridge.base_url, token="") as client:
            rid = await client.create({"title": "Two things", "questions": [
                {"id": "a", "kind": "confirm", "prompt": "ok?"}, {"id": "b", "kind": "text", "prompt": "why?"}]})
        await wait_for(lambda: bridge.store.list_posts(rid))
    path = write_config(tmp_path, 1)  # the daemon is down; nothing listens on port 1

    def run(*argv: str) -> int:
        return cli.run(["-c", path, *argv])

    assert await asyncio.to_thread(run, "list") == 3
    assert "no hitl-bridge daemon answers at http://127.0.0.1:1" in capsys.readouterr().err
    assert await asyncio.to_thread(run, "list", "--offline") == 0
    out, err = capsys.readouterr()
    assert rid in out and err.startswith(f"offline: store sqlite:///{tmp_path}/bridge.db ({path}): reading it")
    assert await asyncio.to_thread(run, "answer", rid, "yes", "--offline") == 2
    assert "pass --question QID" in capsys.readouterr().err
    assert await asyncio.to_thread(run, "answer", rid, "--offline", "--values", '{"a": "no", "b": "late"}',
                                   "--as", "ops-admin") == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"{rid} answered: a=no, b=late by cli:ops-admin"
    assert "a running daemon picks the change up within seconds" in err
    assert await asyncio.to_thread(run, "cancel", rid, "--offline") == 1
    assert "already answered by ops-admin" in capsys.readouterr().err
    assert await asyncio.to_thread(run, "show", "r_missing", "--offline") == 1
    assert await asyncio.to_thread(run, "show", rid, "--offline", "--json") == 0
    view = json.loads(capsys.readouterr().out)
    assert view["answer"]["responder"]["platform"] == "cli" and view["events"][-1]["kind"] == "answered"


def test_offline_in_a_folder_without_a_store_creates_nothing(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["list", "--offline"]) == 2
    assert "offline: there is no store at .hitl-bridge/bridge.db (from <embedded defaults>)" in \
        capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_cli_bad_config_exits_2_with_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("routes:\n  - quorum: 0\n")
    assert cli.run(["-c", str(path), "list"]) == 2
    assert "bad.yaml:2: routes[0].quorum" in capsys.readouterr().err
    assert cli.run(["list", "--limit", "0"]) == 2
    assert "Invalid value for '--limit'" in capsys.readouterr().err


def test_doctor_and_check_config_refuse_targets_without_channel(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"store: {{url: 'sqlite:///{tmp_path}/b.db'}}\nhttp: {{listen: '127.0.0.1:1'}}\n"
                    "routes:\n  - match: {source: delta}\n    notify: ['slack:#deploys', '#ops']\n")
    assert cli.run(["doctor", "-c", str(path)]) == 1  # --config after the verb works too
    out = capsys.readouterr().out
    assert ("[FAIL] slack:#deploys: has no configured channel (configured channels: web), named in "
            "routes[0].notify — fix: add a slack: section with bot_token and signing_secret (or app_token)") in out
    assert "[FAIL] #ops: names no channel (configured channels: web), named in routes[0].notify — fix: " \
           "write slack:#ops" in out
    assert cli.run(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"config error: {path}: routes[0].notify: target 'slack:#deploys' has no configured "
                          "channel") and "(and 1 more target(s) without a channel)" in err
    assert cli.run(["check-config", str(path), "--json"]) == 2
    refused = json.loads(capsys.readouterr().out)
    assert refused["ok"] is False and refused["key"] == "routes[0].notify"
    good = tmp_path / "good.yaml"
    good.write_text("routes:\n  - notify: [web]\n")
    assert cli.run(["check-config", str(good)]) == 0
    assert capsys.readouterr().out.strip() == f"{good}: ok — 1 route(s); channels: web; sources: webhook"
    assert cli.run(["--config", str(good), "check-config"]) == 0


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


def test_doctor_json_checks_a_store_without_creating_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path)
    assert cli.run(["doctor", "--json", "-c", path]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is True
    checks = {c["check"]: c for c in body["checks"]}
    assert checks["store"]["status"] == "info" and "does not exist yet: `serve` creates it" in checks["store"]["detail"]
    assert not (tmp_path / "bridge.db").exists()
    assert checks["daemon"]["status"] == "info" and "not running at http://127.0.0.1:1" in checks["daemon"]["detail"]


def test_doctor_warns_of_a_chat_section_switched_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"store: {{url: 'sqlite:///{tmp_path}/b.db'}}\nhttp: {{listen: '127.0.0.1:1'}}\n"
                    "slack: {bot_token: '${SLACK_BOT_TOKEN:-}', signing_secret: s}\n")
    assert cli.run(["doctor", "-c", str(path)]) == 0  # optional by its `:-`: a warning, not a failure
    assert ("[warn] channels: the slack: section's bot_token is empty, so Slack is off — fix: set it, or remove "
            "the section") in capsys.readouterr().out


# help, version, completion, registration -------------------------------------------------------
def test_every_verb_and_option_has_help_and_the_exit_codes_are_documented() -> None:
    runner = CliRunner()
    top = runner.invoke(cli.root, ["--help"], prog_name="hitl-bridge")
    assert top.exit_code == 0 and top.output.startswith("Usage: hitl-bridge [OPTIONS] COMMAND [ARGS]...")
    for text in ("  0    ok\n", "  1    refused or not found", "  2    usage or config error",
                 "  3    no daemon answers at the URL\n", "  4    token missing or refused\n", "  130  interrupted",
                 "  141  the reader closed the output early", "  HITL_BRIDGE_URL     the daemon to talk to"):
        assert text in top.output, text
    assert runner.invoke(cli.root, ["--version"]).output.strip() == "hitl-bridge 0.1.0"
    ctx = click.Context(cli.root)
    printing = set()
    for verb in cli.VERBS:
        command = cli.root.get_command(ctx, verb)
        assert command is not None and command.help and command.short_help, verb
        shown = runner.invoke(cli.root, [verb, "--help"])
        assert shown.exit_code == 0 and command.help.split()[0] in shown.output, verb
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.help, f"{verb} {param.opts}"
            if param.name == "as_json":
                printing.add(verb)
    assert printing == {"list", "show", "answer", "cancel", "redeliver", "doctor", "check-config", "away"}
    assert "act_for_others" in runner.invoke(cli.root, ["answer", "--help"]).output


def test_completion_scripts_and_completing_in_bash(tmp_path: Path) -> None:
    runner = CliRunner()
    marks = {"bash": "complete -o nosort -F _hitl_bridge_completion hitl-bridge",
             "zsh": "#compdef hitl-bridge", "fish": "complete --no-files --command hitl-bridge"}
    scripts = {}
    for shell, mark in marks.items():
        done = runner.invoke(cli.root, ["completion", shell])
        assert done.exit_code == 0 and mark in done.output and "_HITL_BRIDGE_COMPLETE" in done.output, shell
        scripts[shell] = done.output
    (tmp_path / "hitl-bridge.bash").write_text(scripts["bash"])
    probe = ("source hitl-bridge.bash\n"
             "complete_words() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMPREPLY=();"
             " _hitl_bridge_completion hitl-bridge; echo \"${COMPREPLY[*]}\"; }\n"
             "complete_words hitl-bridge sh\ncomplete_words hitl-bridge list --state ca\n"
             "complete_words hitl-bridge completion f\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_BRIDGE")}
    env["PATH"] = f"{HITL_BIN}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(["bash", "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.stdout.splitlines() == ["show", "cancelled", "fish"], done.stderr


extra_verb = click.Command("extra", callback=lambda: 7, help="A verb added by one line in VERBS.",
                           short_help="A verb added by one line.")


def test_a_verb_is_registered_by_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.VERBS, "extra", "tests.core.test_cli:extra_verb")
    assert "extra         A verb added by one line." in CliRunner().invoke(cli.root, ["--help"]).output
    assert cli.run(["extra"]) == 7
    monkeypatch.setitem(cli.VERBS, "broken", "tests.core.test_cli:write_config")
    with pytest.raises(TypeError, match="is not a click command"):
        cli.run(["broken"])


def test_the_docs_list_the_exit_codes_the_cli_uses() -> None:
    import re

    from bridge.cli import exits

    readme = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    section = readme.split("## Exit codes", 1)[1].split("## ", 1)[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)}
    used = {exits.OK, exits.REFUSED, exits.USAGE, exits.UNREACHABLE, exits.UNAUTHORIZED, exits.INTERRUPTED,
            exits.BROKEN_PIPE}
    assert documented == used


def add_echo(verbs: Any) -> None:
    """An adapter's verb registered the argparse way (as `bridge.registry.COMMANDS` lists them)."""
    parser = verbs.add_parser("echo", help="say a word", description="Say a word back (an adapter's verb).")
    parser.add_argument("--word", required=True)
    parser.add_argument("--url")
    parser.set_defaults(func=echo, without_config=True)


async def echo(args: argparse.Namespace, settings: object) -> int:
    print(f"{args.word} at {args.url} (settings: {settings})")
    return 5


def test_adapter_verbs_registered_the_argparse_way_run_with_their_own_parser(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from bridge import registry

    monkeypatch.setattr(registry, "COMMANDS", {"echo": "tests.core.test_cli:add_echo",
                                               "gone": "adapters.not_in_this_build:add_command"}, raising=False)
    assert cli.run(["echo", "--word", "hi", "--token", "t"]) == 2  # its own parser: --token is not its flag
    assert "unrecognized arguments: --token t" in capsys.readouterr().err
    assert cli.run(["echo", "--word", "hi"]) == 5
    assert capsys.readouterr().out == "hi at None (settings: None)\n"  # without_config: no config read
    assert cli.run(["--url", "http://bridge:8787", "echo", "--word", "hi"]) == 5  # the root's --url reaches it
    assert capsys.readouterr().out == "hi at http://bridge:8787 (settings: None)\n"
    assert cli.run(["echo", "--help"]) == 0 and "--word WORD" in capsys.readouterr().out
    listed = CliRunner().invoke(cli.root, ["--help"]).output
    assert "echo          Say a word back (an adapter's verb)." in listed and "gone" not in listed
    assert cli.run(["gone"]) == 2


def test_a_store_that_cannot_be_opened_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "pg.yaml"
    config.write_text("store: {url: 'postgresql://nobody@127.0.0.1:1/none'}\n")
    assert cli.run(["-c", str(config), "list", "--offline"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("store error: cannot open PostgreSQL store postgresql://nobody@127.0.0.1:1/none")
    assert not any("Traceback" in line for line in err)
