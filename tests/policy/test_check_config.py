"""Broken and hostile rules are refused when the config is read (check-config, start, reload),
each with the file, the line, the key and the fix."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.config import load_settings
from bridge.errors import ConfigError
from tests.cli.helpers import HITL, clean_env

BASE: dict[str, Any] = {"sources": [{"type": "webhook"}, {"type": "mcp"}],
                        "routes": [{"name": "agents", "match": {"engine": "mcp"}}]}

CASES = [
    ({"name": "r", "tool": "x", "arguments": {"command": "re:(a+)+$"}}, "policies[0].arguments",
     "repeat inside a repeat"),
    ({"name": "r", "tool": "x", "arguments": {"q": "re:(x|xx)*y"}}, "policies[0].arguments", "alternatives inside"),
    ({"name": "r", "tool": "x", "arguments": {"q": r"re:(\w+)\1"}}, "policies[0].arguments", "backreference"),
    ({"name": "r", "tool": "x", "arguments": {"q": "re:" + "a" * 600}}, "policies[0].arguments", "longer than 500"),
    ({"name": "r", "tool": "x", "arguments": {"q": "re:[unclosed"}}, "policies[0].arguments",
     "not a regular expression"),
    ({"name": "r", "tool": "x", "arguments": {"q": "re:a.*b.*c.*d.*e+f"}}, "policies[0].arguments",
     "more than 4 unbounded repeats"),
    ({"name": "r", "rule": "Edit(./**/a/**/b/**/c/**)", "effect": "allow"}, "policies[0].rule", "more than 3 `**`"),
    ({"name": "r", "rule": "Bash(ls", "effect": "allow"}, "policies[0].rule", "not a permission rule"),
    ({"name": "r", "rule": "Read(~/.ssh/**)", "effect": "deny"}, "policies[0].rule", "home directory"),
    ({"name": "r", "rule": "Edit(./src/../../etc/**)", "effect": "allow"}, "policies[0].rule", "`..`"),
    ({"name": "r", "rule": "Task(anything)", "effect": "allow"}, "policies[0].rule", "its arguments with `arguments:`"),
    ({"name": "r", "rule": "Bash", "effect": "alow"}, "policies[0]", "not one of allow, deny, ask"),
    ({"name": "r", "rule": "Bash", "effect": "allow", "reason": "x"}, "policies[0]", "drop reason"),
    ({"name": "r", "rule": "Bash", "route": "agnets"}, "policies[0]", "no route is named 'agnets'"),
    ({"name": "r", "rule": "Bash", "source": "slack"}, "policies[0]", "no source is named 'slack'"),
    ({"name": "r", "rule": "Bash", "source": "mcp"}, "policies[0]", "mcp_call: permission_prompt"),
    ({"name": "r", "rule": "Bash(git:*)", "tool": "Edit"}, "policies[0]", "excludes every tool"),
    ({"name": "bad name!", "rule": "Bash"}, "policies[0].name", "letters, digits"),
    ({"name": "r", "rule": "Bash", "effect": "allow", "argumnets": {}}, "policies[0].argumnets",
     "did you mean arguments"),
]


def write(tmp_path: Path, policies: list[dict[str, Any]]) -> Path:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(yaml.safe_dump({**BASE, "policies": policies}, sort_keys=False))
    return path


@pytest.mark.parametrize(("rule", "key", "words"), CASES)
def test_a_broken_or_hostile_rule_is_refused_with_its_key(tmp_path: Path, rule: dict[str, Any], key: str,
                                                          words: str) -> None:
    path = write(tmp_path, [rule])
    with pytest.raises(ConfigError) as refused:
        load_settings(str(path), env={})
    message = str(refused.value)
    assert f"{path}:" in message and f"{key}" in message and words in message, message


def test_shadowed_rules_are_refused_naming_both(tmp_path: Path) -> None:
    cases = [
        ([{"name": "all-bash", "rule": "Bash", "effect": "deny"},
          {"name": "rm", "rule": "Bash(rm:*)", "effect": "deny"}], "'rm' is shadowed by policies[0] ('all-bash'"),
        ([{"name": "ask-writes", "rule": "Edit(./src/**)", "effect": "ask"},
          {"name": "edits", "rule": "Edit", "effect": "allow"}], "'ask-writes' is shadowed by policies[1] ('edits'"),
        ([{"name": "deploys", "tool": "deploy_*", "effect": "allow"},
          {"name": "deploy-api", "tool": "deploy_api", "route": "agents", "effect": "allow"}],
         "'deploy-api' is shadowed by policies[0]"),
        ([{"name": "a", "rule": "Read", "effect": "allow"}, {"name": "a", "rule": "Write", "effect": "allow"}],
         "the name is taken by policies[0]"),
    ]
    for policies, words in cases:
        with pytest.raises(ConfigError, match=r"policies\[\d\]") as refused:
            load_settings(str(write(tmp_path, policies)), env={})
        assert words in str(refused.value), str(refused.value)


def test_rules_that_only_overlap_are_kept(tmp_path: Path) -> None:
    policies = [
        {"name": "no-rm-rf", "rule": "Bash(rm -rf:*)", "effect": "deny", "reason": "never"},
        {"name": "git", "rule": "Bash(git:*)", "effect": "allow"},
        {"name": "reads", "rule": "Read", "effect": "allow"},
        {"name": "writes", "rule": "Edit", "effect": "ask", "grants": False},
        {"name": "prod", "tool": "deploy_*", "arguments": {"env": "re:^prod"}, "effect": "deny"},
        {"name": "fs", "rule": "mcp__fs__*", "annotations": {"readOnlyHint": True}, "effect": "allow"},
    ]
    settings = load_settings(str(write(tmp_path, policies)), env={})
    assert [p.name for p in settings.policies] == ["no-rm-rf", "git", "reads", "writes", "prod", "fs"]


def test_check_config_names_the_line_and_the_fix(tmp_path: Path) -> None:
    path = write(tmp_path, [{"name": "r", "tool": "x", "arguments": {"command": "re:(a*)*b"}}])
    done = subprocess.run([HITL, "check-config", "--config", str(path)], env=clean_env(), capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert f"{path}:" in done.stderr and "policies[0].arguments" in done.stderr
    assert "write it with one repeat" in done.stderr
