"""The resume command runner: placeholders, no shell, timeout, scrubbed output."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from adapters.delta.resume import (
    BadResumeCommand,
    build_argv,
    check_template,
    child_env,
    run_resume,
    scrub,
)


def test_placeholders_fill_whole_arguments_without_a_shell() -> None:
    argv = build_argv("delta run -y -w {workspace} -m resume --run-id={run_id}",
                      workspace="/srv/a b/W1; rm -rf /", run_id="20251017_1", shell=False)
    assert argv == ["delta", "run", "-y", "-w", "/srv/a b/W1; rm -rf /", "-m", "resume",
                    "--run-id=20251017_1"]


def test_shell_mode_quotes_values() -> None:
    argv = build_argv("cd {workspace} && delta run -m resume", workspace="/x/$(id)", run_id=None,
                      shell=True)
    assert argv[:2] == ["/bin/sh", "-c"]
    assert "'/x/$(id)'" in argv[2]


@pytest.mark.parametrize("template", ["", "   ", "delta 'unbalanced"])
def test_bad_templates_are_refused(template: str) -> None:
    with pytest.raises(BadResumeCommand):
        check_template(template)


def test_scrub_replaces_secrets_longest_first() -> None:
    assert scrub("pw=s3cr3t-pw and s3cr3t", ["s3cr3t", "s3cr3t-pw"]) == "pw=[secret] and [secret]"
    assert scrub("nothing", [""]) == "nothing"


def test_child_env_drops_the_bridges_own_secrets() -> None:
    env = child_env({"PATH": "/bin", "SLACK_BOT_TOKEN": "xoxb", "BRIDGE_SECRET_KEY": "k",
                     "TELEGRAM_BOT_TOKEN": "t", "OPENAI_API_KEY": "engine-needs-it"})
    assert env == {"PATH": "/bin", "OPENAI_API_KEY": "engine-needs-it"}


async def test_exit_code_and_scrubbed_output(tmp_path: Path) -> None:
    code = "import os,sys; print('answer was s3cr3t in', os.getcwd()); sys.exit(101)"
    result = await run_resume([sys.executable, "-c", code], cwd=str(tmp_path), timeout_s=30,
                              secrets=["s3cr3t"])
    assert result.exit_code == 101
    assert "s3cr3t" not in result.output
    assert "[secret]" in result.output
    assert str(tmp_path) in result.output


async def test_secret_on_the_command_line_is_scrubbed_too(tmp_path: Path) -> None:
    result = await run_resume([sys.executable, "-c", "pass", "hunter2"], cwd=str(tmp_path),
                              timeout_s=30, secrets=["hunter2"])
    assert result.exit_code == 0
    assert "hunter2" not in " ".join(result.argv)


async def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    code = (
        "import signal,subprocess,sys;"
        f"p=subprocess.Popen([sys.executable,'-c','import signal; signal.pause()']);"
        f"open({str(marker)!r},'w').write(str(p.pid));"
        "signal.pause()"
    )
    result = await run_resume([sys.executable, "-c", code], cwd=str(tmp_path), timeout_s=0.5)
    assert result.timed_out and result.exit_code is None
    assert "timed out" in result.summary
    child = int(marker.read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


async def test_missing_program_is_reported_not_raised(tmp_path: Path) -> None:
    result = await run_resume(["/nonexistent/delta", "run"], cwd=str(tmp_path), timeout_s=5)
    assert result.exit_code is None
    assert result.error and "nonexistent" in result.error
    assert "could not start" in result.summary


async def test_output_is_bounded(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('x' * 1_000_000 + 'END')"
    result = await run_resume([sys.executable, "-c", code], cwd=str(tmp_path), timeout_s=30)
    assert result.exit_code == 0
    assert len(result.output) <= 4096
    assert result.output.endswith("END")
