"""`serve` and `demo` as child processes: a port that is taken is one clear line (no
traceback, nothing created), and a demo stopped with Ctrl-C cancels what it left open."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from bridge import cli as hitl
from tests.cli.helpers import CALL_S, HITL, clean_env, cli


def test_serve_on_a_taken_port_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        config = tmp_path / "hitl-bridge.yaml"
        config.write_text(f"store: {{url: 'sqlite:///{tmp_path}/bridge.db'}}\nhttp: {{listen: '127.0.0.1:{port}'}}\n")
        done = cli("serve", cwd=tmp_path)
    assert done.code == 1 and done.out == ""
    assert done.err.strip() == (f"cannot listen on 127.0.0.1:{port}: Address already in use. Is another hitl-bridge "
                                "(or `demo`) running there? Stop it, or set another http.listen.")
    assert sorted(os.listdir(tmp_path)) == ["hitl-bridge.yaml"]  # no store opened


def test_demo_stopped_with_ctrl_c_cancels_what_it_left_open(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "here"
    folder.mkdir()
    store = tmp_path / "kept.db"
    proc = subprocess.Popen([HITL, "demo", "--listen", "127.0.0.1:0", "--store", f"sqlite:///{store}"], cwd=folder,
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    printed = threading.Condition()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with printed:
                lines.append(line.rstrip("\n"))
                printed.notify_all()

    threading.Thread(target=read, daemon=True).start()

    def wait_line(pattern: str) -> str:
        with printed:
            assert printed.wait_for(lambda: any(re.search(pattern, x) for x in lines) or proc.poll() is not None,
                                    CALL_S), lines
        return next(x for x in lines if re.search(pattern, x))

    try:
        url = wait_line(r"inbox --url (\S+)").split("--url ")[1].strip()
        listed = cli("list", "--open", "--json", "--url", url, cwd=folder)
        requests = json.loads(listed.out)
        assert len(requests) == 6 and str(store) in wait_line("created 6 requests in")
        pick = next(r["id"] for r in requests if r["title"] == "Pick the canary region")
        assert cli("answer", pick, "1", "--url", url, cwd=folder).code == 0
        wait_line(r"'Pick the canary region' → answered: \{\"region\": \"eu-west-1\"\}")
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(CALL_S) == 0
    wait_line("demo: stopped")
    assert "demo: cancelled 5 open request(s)" in lines and not any("Traceback" in x for x in lines)
    assert sum("→ cancelled (the demo stopped)" in x for x in lines) == 5
    assert os.listdir(folder) == []
    capsys.readouterr()
    config = tmp_path / "admin.yaml"
    config.write_text(f"store: {{url: 'sqlite:///{store}'}}\n")
    assert hitl.run(["-c", str(config), "list", "--offline", "--json"]) == 0
    states = sorted(r["state"] for r in json.loads(capsys.readouterr().out))
    assert states == ["cancelled"] * 5 + ["delivered"]
