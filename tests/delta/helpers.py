"""Shared helpers for the Delta tests: run the stand-in engine, lay out workspaces."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ENGINE = str(Path(__file__).resolve().parents[1] / "fakes" / "delta_engine.py")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "delta"  # copied from the real engine
VERSIONS = ("1.2", "1.3.0", "1.4", "1.10.1")
RESUMABLE_VERSIONS = ("1.2", "1.4", "1.10.1")


def script(*asks: dict[str, Any], record: bool = True) -> str:
    """A task message carrying the stand-in's script."""
    return "Deploy HARNESS_SCRIPT " + json.dumps({"asks": list(asks), "record": record})


def engine(workspace: Path, message: str, version: str = "1.10.1", *extra: str) -> subprocess.CompletedProcess[str]:
    """Run the stand-in engine once, like `delta run -y -w WS -m MSG`."""
    return subprocess.run(
        [sys.executable, ENGINE, "run", "-y", "-w", str(workspace), "-m", message,
         "--engine-version", version, *extra],
        capture_output=True, text=True, timeout=30, check=False,
    )


def resume_template(version: str) -> str:
    """A resume_command for the stand-in, as a user would configure it."""
    return f"{sys.executable} {ENGINE} run -y -w {{workspace}} -m resume --engine-version {version}"


def request_files(workspace: Path) -> list[Path]:
    """Every mailbox request.json (not the io/invocations logs) in a workspace."""
    return sorted(p for p in workspace.rglob("request.json") if p.parent.name == "interaction")


def make_v1_10_workspace(workspace: Path, run_id: str = "20261122_012445_4242f7",
                         request: str = "request.text.json") -> Path:
    """A workspace laid out from the real v1.10.1 fixtures; returns the mailbox folder."""
    run = workspace / ".delta" / run_id
    (run / "interaction").mkdir(parents=True)
    shutil.copy(FIXTURES / "v1.10.1" / "VERSION", workspace / ".delta" / "VERSION")
    shutil.copy(FIXTURES / "v1.10.1" / "metadata.waiting.json", run / "metadata.json")
    shutil.copy(FIXTURES / "v1.10.1" / "journal.waiting.jsonl", run / "journal.jsonl")
    shutil.copy(FIXTURES / "v1.10.1" / request, run / "interaction" / "request.json")
    inv = run / "io" / "invocations" / "9f2cd3b0-aa1f-4499-9ef7-5eadef2a1c5b"
    inv.mkdir(parents=True)
    (inv / "request.json").write_text('{"messages": []}')
    return run / "interaction"


def make_v1_3_workspace(workspace: Path, request: str = "request.confirmation.json") -> Path:
    """A workspace laid out from the real v1.3.0 fixtures; returns the mailbox folder."""
    delta = workspace / ".delta"
    run_id = (FIXTURES / "v1.3.0" / "LATEST").read_text()
    (delta / run_id).mkdir(parents=True)
    (delta / "interaction").mkdir()
    shutil.copy(FIXTURES / "v1.3.0" / "LATEST", delta / "LATEST")
    shutil.copy(FIXTURES / "v1.3.0" / "VERSION", delta / "VERSION")
    shutil.copy(FIXTURES / "v1.3.0" / "metadata.waiting.json", delta / run_id / "metadata.json")
    shutil.copy(FIXTURES / "v1.3.0" / request, delta / "interaction" / "request.json")
    return delta / "interaction"


def make_v1_2_workspace(workspace: Path, run_id: str = "20251017_142233_a1b2c3") -> Path:
    """The spec's layout: shared mailbox, metadata under runs/<id>/execution/."""
    delta = workspace / ".delta"
    execution = delta / "runs" / run_id / "execution"
    execution.mkdir(parents=True)
    (delta / "interaction").mkdir()
    (delta / "runs" / "LATEST").write_text(run_id)
    meta = json.loads((FIXTURES / "v1.10.1" / "metadata.waiting.json").read_text())
    meta["run_id"] = run_id
    (execution / "metadata.json").write_text(json.dumps(meta, indent=2))
    shutil.copy(FIXTURES / "v1.10.1" / "request.password.json", delta / "interaction" / "request.json")
    return delta / "interaction"


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[bool]:
    """Make `directory` refuse new files, even for root (chattr +i); yields False if impossible."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            yield True
        finally:
            directory.chmod(0o755)
        return
    done = subprocess.run(["chattr", "+i", str(directory)], capture_output=True, check=False)
    if done.returncode != 0:
        yield False
        return
    try:
        yield True
    finally:
        subprocess.run(["chattr", "-i", str(directory)], capture_output=True, check=False)
