"""A config with several mistakes shows every one at once, each with the file, its line, the
key and a did-you-mean for a misspelt key; a YAML syntax error names the file. The same for
`serve`, `check-config` and `doctor` (they all read the config the same way)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridge.config import load_settings
from bridge.config_errors import ConfigProblems
from tests.cli.helpers import cli

BAD = """\
http:
  listen: 127.0.0.1:8787
  api_token: ["abcdefghijklmnopqrstuvwxyz"]
routes:
  - notify: [web]
    timeout: soon
  - notfy: [web]
log_levl: DEBUG
"""


def expected(path: Path) -> list[str]:
    return [f"{path}:3: http.api_token: unknown key (did you mean api_tokens?)",
            f"{path}:6: routes[0].timeout: cannot read 'soon' as a duration (use e.g. 30s, 10m, 2h, 1d)",
            f"{path}:7: routes[1].notfy: unknown key (did you mean notify?)",
            f"{path}:8: log_levl: unknown key (did you mean log_level?)"]


def test_every_problem_with_its_line_and_a_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(BAD)
    with pytest.raises(ConfigProblems) as raised:
        load_settings(str(path), env={})
    assert str(raised.value).splitlines() == expected(path)
    assert [p[0] for p in raised.value.problems] == [3, 6, 7, 8]


@pytest.mark.parametrize("verb", [["serve"], ["check-config"], ["doctor"]])
def test_serve_check_config_and_doctor_show_them_all(tmp_path: Path, verb: list[str]) -> None:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(BAD)
    run = cli("-c", str(path), *verb, cwd=tmp_path)
    assert run.code == 2, run
    shown = run.err.strip().splitlines()
    assert shown == [f"config error: {expected(path)[0]}", *expected(path)[1:]], run.err
    assert "more problem(s)" not in run.err


def test_check_config_json_lists_every_problem(tmp_path: Path) -> None:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(BAD)
    run = cli("check-config", str(path), "--json", cwd=tmp_path)
    found = json.loads(run.out)
    assert run.code == 2 and found["ok"] is False
    assert [(p["line"], p["key"]) for p in found["problems"]] == [
        (3, "http.api_token"), (6, "routes[0].timeout"), (7, "routes[1].notfy"), (8, "log_levl")]


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text("http:\n  listen: [oops\nroutes: []\n")
    with pytest.raises(ConfigProblems) as raised:
        load_settings(str(path), env={})
    message = str(raised.value)
    assert message.startswith(f"{path}:3: not valid YAML") and "<unicode string>" not in message
    assert f'in "{path}", line 2' in message
