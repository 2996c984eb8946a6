"""The stand-in engine produces the same files as the real one (fixtures/delta)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.delta.helpers import FIXTURES, RESUMABLE_VERSIONS, engine, request_files, script

ASKS = (
    {"prompt": "Which environment?", "input_type": "text"},
    {"prompt": "Approve deploy to prod?", "input_type": "confirmation"},
    {"prompt": "Database password?", "input_type": "password", "sensitive": True},
)


def _keys(path: Path) -> list[str]:
    return list(json.loads(path.read_text()))


def test_first_pause_matches_the_real_v1_10_files(tmp_path: Path) -> None:
    done = engine(tmp_path, script(*ASKS), "1.10.1")
    assert done.returncode == 101
    (request,) = request_files(tmp_path)
    run = request.parent.parent
    assert _keys(request) == _keys(FIXTURES / "v1.10.1" / "request.text.json")
    assert _keys(run / "metadata.json") == _keys(FIXTURES / "v1.10.1" / "metadata.waiting.json")
    assert json.loads((run / "metadata.json").read_text())["status"] == "WAITING_FOR_INPUT"
    assert (tmp_path / ".delta" / "VERSION").read_bytes() == (FIXTURES / "v1.10.1" / "VERSION").read_bytes()
    assert not (tmp_path / ".delta" / "LATEST").exists()
    assert not request.read_text().endswith("\n")  # JSON.stringify(…, null, 2), like the engine
    types = [json.loads(line)["type"] for line in (run / "journal.jsonl").read_text().splitlines()]
    fixture = FIXTURES / "v1.10.1" / "journal.waiting.jsonl"
    real = [json.loads(line)["type"] for line in fixture.read_text().splitlines()]
    assert types == real
    assert list(run.glob("io/invocations/*/request.json"))  # LLM logs are there too


def test_v1_3_layout_and_failed_resume(tmp_path: Path) -> None:
    assert engine(tmp_path, script(ASKS[1]), "1.3.0").returncode == 101
    (request,) = request_files(tmp_path)
    assert request == tmp_path / ".delta" / "interaction" / "request.json"
    latest = (tmp_path / ".delta" / "LATEST").read_text()
    meta = tmp_path / ".delta" / latest / "metadata.json"
    assert _keys(meta) == _keys(FIXTURES / "v1.3.0" / "metadata.waiting.json")
    (request.parent / "response.txt").write_text("yes")
    again = engine(tmp_path, "resume", "1.3.0")
    assert again.returncode == 1
    assert request.exists()  # nothing consumed


@pytest.mark.parametrize("version", RESUMABLE_VERSIONS)
def test_full_conversation_for_each_resumable_layout(tmp_path: Path, version: str) -> None:
    assert engine(tmp_path, script(*ASKS), version).returncode == 101
    seen_ids = set()
    for answer in ("staging", "yes", "s3cr3t-pw"):
        (request,) = request_files(tmp_path)
        seen_ids.add(json.loads(request.read_text())["request_id"])
        (request.parent / "response.txt").write_text(answer + "\n")
        done = engine(tmp_path, "resume", version)
    assert done.returncode == 0, done.stderr
    assert 'HARNESS_DONE {"answers": ["staging", "yes", "s3cr3t-pw"]}' in done.stdout
    assert len(seen_ids) == 3
    assert request_files(tmp_path) == []
    assert (tmp_path / "answers.txt").read_text().splitlines()[-1] == "ANSWER 3: s3cr3t-pw"


def test_resume_without_response_exits_101_and_leaves_running(tmp_path: Path) -> None:
    engine(tmp_path, script(*ASKS), "1.10.1")
    again = engine(tmp_path, "resume", "1.10.1")
    assert again.returncode == 101
    (request,) = request_files(tmp_path)
    meta = json.loads((request.parent.parent / "metadata.json").read_text())
    assert meta["status"] == "RUNNING"


def test_missing_message_is_a_config_error(tmp_path: Path) -> None:
    assert engine(tmp_path, "", "1.10.1").returncode == 1


def test_sigint_interrupts_and_the_run_resumes(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    from tests.delta.helpers import ENGINE
    from tests.processes import poll_until

    message = "Deploy HARNESS_SCRIPT " + json.dumps({"asks": [ASKS[0]], "work_s": 30})
    proc = subprocess.Popen([sys.executable, ENGINE, "run", "-y", "-w", str(tmp_path), "-m", message],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert poll_until(lambda: list(tmp_path.glob(".delta/*/journal.jsonl")), within=10), "the run never started"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 130
    (meta,) = tmp_path.glob(".delta/*/metadata.json")
    assert json.loads(meta.read_text())["status"] == "INTERRUPTED"
    # An interrupted run is resumable: the next start goes on and asks its question.
    os.environ.pop("DELTA_FAKE_VERSION", None)
    done = subprocess.run([sys.executable, ENGINE, "run", "-y", "-w", str(tmp_path), "-m", "resume"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 101
    assert len(request_files(tmp_path)) == 1
