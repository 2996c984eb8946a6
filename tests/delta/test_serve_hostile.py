"""`hitl-bridge serve` as an operator runs it, with hostile workspaces under its root: a FIFO
where a file belongs, links out of the root, a mailbox nobody may read. Every one is
reported once, the good workspace flows, and SIGTERM ends the process within its bound."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bridge.daemon import EXIT_GRACE_S, STOP_DEADLINE_S
from tests.delta.helpers import make_v1_10_workspace
from tests.processes import ServeChild

RUN = "20261122_012445_4242f7"
HITL = str(Path(sys.executable).parent / "hitl-bridge")
# As root, permissions do not apply: drop the two capabilities that bypass them, so a
# folder with mode 000 is as unreadable to the daemon as it is to any service user.
NO_DAC = ["--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]


def ask(mailbox: Path, request_id: str) -> None:
    (mailbox / "request.json").write_text(json.dumps({"request_id": request_id, "prompt": "Go?"}))


def poll(served: ServeChild, check: Callable[[], Any]) -> Any:
    """`check()` once it holds, the daemon still running, with a deadline."""
    return served.until(check, within=15.0, alive=True)


def test_serve_reports_every_hostile_workspace_once_and_stops_within_its_bound_on_sigterm(tmp_path: Path) -> None:
    agents, outside = tmp_path / "agents", tmp_path / "outside"
    ask(make_v1_10_workspace(agents / "good"), "req-good")
    fifo = make_v1_10_workspace(agents / "fifo") / "request.json"
    fifo.unlink()
    os.mkfifo(fifo)
    version = agents / "fifo" / ".delta" / "VERSION"
    version.unlink()
    os.mkfifo(version)
    ask(make_v1_10_workspace(outside / "ws"), "req-outside")
    (agents / "escape").symlink_to(outside / "ws")
    (agents / "run-out" / ".delta").mkdir(parents=True)
    (agents / "run-out" / ".delta" / RUN).symlink_to(outside / "ws" / ".delta" / RUN)
    locked = make_v1_10_workspace(agents / "locked")
    ask(locked, "req-locked")
    locked.chmod(0)
    refused = {str(fifo): "FIFO", str(version): "FIFO", str(agents / "escape"): "outside the root",
               str(agents / "run-out" / ".delta" / RUN): "outside the workspace"}
    unprivileged = os.geteuid() != 0 or shutil.which("setpriv") is not None
    if unprivileged:
        refused[str(locked)] = "Permission denied"
    config = tmp_path / "hitl-bridge.yaml"
    config.write_text(json.dumps({
        "store": {"url": f"sqlite:///{tmp_path}/bridge.db"}, "http": {"listen": "127.0.0.1:0"},
        "sources": [{"type": "delta", "roots": [str(agents / "*")], "rescan_every": "1h"}]}))
    argv = [HITL, "--config", str(config), "serve"]
    if os.geteuid() == 0 and unprivileged:
        argv = ["setpriv", *NO_DAC, *argv]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HITL_BRIDGE", "SLACK_", "TELEGRAM_"))}
    served = ServeChild(argv, tmp_path, env)
    try:
        poll(served, lambda: served.url)
        with httpx.Client(base_url=served.url, timeout=5) as client:
            def shown() -> set[str]:
                return {r["external_id"] for r in client.get("/v1/requests").json()["requests"]}

            poll(served, lambda: "req-good" in shown())

            def problems() -> dict[str, str] | None:
                found = {p["where"]: p["reason"] for p in client.get("/v1/sources").json()["sources"][0]["problems"]}
                return found if refused.keys() <= found.keys() else None

            found = poll(served, problems)
            assert isinstance(found, dict)
            for where, why in refused.items():
                assert why in found[where], (where, found[where])
            assert "req-outside" not in shown() and "req-locked" not in shown()
        started = time.monotonic()
        served.proc.send_signal(signal.SIGTERM)
        bound = STOP_DEADLINE_S + EXIT_GRACE_S + 5  # a hang, not a speed, is what fails here
        assert served.proc.wait(timeout=bound) == 0, "\n".join(served.lines[-30:])
        assert time.monotonic() - started < bound
    finally:
        locked.chmod(0o755)
        if served.proc.poll() is None:
            served.proc.kill()
            served.proc.wait()
    for where in refused:
        said = [line for line in served.lines if where + ":" in line and "WARNING" in line]
        assert len(said) == 1, (where, said)
    assert not (outside / "ws" / ".delta" / RUN / "interaction" / "response.txt").exists()
