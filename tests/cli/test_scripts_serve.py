"""`./scripts/serve` as a newcomer runs it: a taken port is said before anything is installed;
an install that is current is not redone (no pip); the way to get `hitl-bridge` on the PATH is
printed once at start. And the whole dependency tree is pinned: requirements.lock holds every
installed distribution, and every install script uses it as a constraints file."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from importlib.metadata import distributions
from pathlib import Path

from tests.cli.helpers import clean_env
from tests.processes import ServeChild

ROOT = Path(__file__).resolve().parents[2]
SERVE = str(ROOT / "scripts" / "serve")
REAL_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def install_hash() -> str:
    files = ("pyproject.toml", "clients/python/pyproject.toml", "requirements.lock")
    return hashlib.sha256(b"".join((ROOT / f).read_bytes() for f in files)).hexdigest()


def stand_in_venv(where: Path) -> Path:
    """A venv for the script: its hitl-bridge and python are this environment's, its pip only
    writes down that it was called."""
    bin_dir = where / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    (bin_dir / "hitl-bridge").symlink_to(REAL_BIN / "hitl-bridge")
    pip = bin_dir / "pip"
    pip.write_text(f"#!/bin/sh\necho \"$@\" >> {where / 'pip-calls'}\n")
    pip.chmod(0o755)
    return where


def run_serve(cwd: Path, venv: Path, *args: str) -> ServeChild:
    env = clean_env(HITL_BRIDGE_VENV=str(venv), PYTHON=sys.executable)
    return ServeChild([SERVE, *args], cwd, env)


def test_a_taken_port_is_said_before_installing(tmp_path: Path) -> None:
    venv = tmp_path / "venv-not-made-yet"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        env = clean_env(HITL_BRIDGE_VENV=str(venv), PYTHON=sys.executable)
        done = subprocess.run([SERVE, "--listen", f"127.0.0.1:{port}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done
    assert f"scripts/serve: cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert not venv.exists(), "nothing is installed for a daemon that cannot start"


def test_a_current_install_is_not_redone_and_the_path_line_is_printed_once(tmp_path: Path) -> None:
    venv = stand_in_venv(tmp_path / "venv")
    (venv / ".hitl-bridge-install").write_text(install_hash() + "\n")
    port = free_port()
    served = run_serve(tmp_path, venv, "--listen", f"127.0.0.1:{port}")
    try:
        served.until(lambda: served.url or served.proc.poll() is not None)
        assert served.url == f"http://127.0.0.1:{port}", "\n".join(served.lines)
        hints = [line for line in served.lines if "the hitl-bridge command is in" in line]
        assert hints == [f"scripts/serve: the hitl-bridge command is in {venv}/bin; to use it in your shell: "
                         f". {venv}/bin/activate (or export PATH=\"{venv}/bin:$PATH\")"], served.lines
        assert not (venv / "pip-calls").exists(), "pip ran for an install that is current"
    finally:
        served.proc.terminate()
        served.proc.wait(30)

    (venv / ".hitl-bridge-install").write_text("stale\n")  # pyproject or the lock changed: install again
    again = run_serve(tmp_path, venv, "--listen", f"127.0.0.1:{port}")
    try:
        again.until(lambda: again.url or again.proc.poll() is not None)
        calls = (venv / "pip-calls").read_text()
        assert f"-c {ROOT}/requirements.lock" in calls, calls
        assert (venv / ".hitl-bridge-install").read_text().strip() == install_hash()
    finally:
        again.proc.terminate()
        again.proc.wait(30)


def test_requirements_lock_pins_the_whole_tree_and_every_install_uses_it() -> None:
    lines = [x for x in (ROOT / "requirements.lock").read_text().splitlines() if x and not x.startswith("#")]
    pinned = {x.split("==")[0].lower().replace("_", "-") for x in lines}
    assert all("==" in x for x in lines), [x for x in lines if "==" not in x]
    ours = {"hitl-bridge", "hitl-bridge-client", "pip", "setuptools-scm"}
    installed = {(d.metadata["Name"] or "").lower().replace("_", "-") for d in distributions()} - ours
    missing = sorted(installed - pinned - {"pip", "wheel"})
    assert missing == [], f"installed but not in requirements.lock (run scripts/lock): {missing}"
    for script in ("scripts/serve", "scripts/test", "Dockerfile"):
        text = (ROOT / script).read_text()
        assert "-c requirements.lock" in text or '-c "$here/requirements.lock"' in text, script
    assert os.access(ROOT / "scripts" / "lock", os.X_OK)
