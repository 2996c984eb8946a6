"""The real `hitl-bridge` command as a person runs it: a daemon started elsewhere (its own
folder, a port the OS picks, API tokens), and the CLI run as a child process from another
folder with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hitl_bridge_client import Client

from tests.processes import ServeChild

HITL = str(Path(sys.executable).parent / "hitl-bridge")
OPS = "ops-token-0123456789abcdef"  # an ordinary token: answers count as api:ops
LEAD = "lead-token-0123456789abcdef"  # may answer for others
CALL_S = 60.0  # a CLI run on a loaded 2-core machine


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any HITL_BRIDGE_* or chat tokens, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HITL_BRIDGE", "SLACK_", "TELEGRAM_", "BRIDGE_")) and k not in ("EDITOR", "VISUAL")}
    env.update(COLUMNS="120", LINES="40")  # the width output is laid out for, whatever ran before
    env.update(extra)
    return env


@dataclass
class Run:
    code: int
    out: str
    err: str


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None) -> Run:
    """`hitl-bridge ARGS` in `cwd`, as a child process."""
    done = subprocess.run([HITL, *args], cwd=cwd, env=env if env is not None else clean_env(), input=stdin,
                          capture_output=True, text=True, timeout=CALL_S, check=False)
    return Run(done.returncode, done.stdout, done.stderr)


class Served(ServeChild):
    """`hitl-bridge serve` in its own folder; stderr collected line by line."""

    def __init__(self, home: Path, config: dict[str, Any], *extra: str) -> None:
        self.home = home
        self.config = home / "hitl-bridge.yaml"
        self.config.write_text(yaml.safe_dump(config))
        super().__init__([HITL, *extra, "serve"], home, clean_env())

    def started(self) -> Served:
        self.until(lambda: self.url or self.proc.poll() is not None)
        assert self.url, "\n".join(self.lines)
        return self

    def client(self, token: str = OPS) -> Client:
        return Client(self.url, token=token, unavailable_after=5)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(30)


def env_for(daemon: Served, token: str = OPS, **extra: str) -> dict[str, str]:
    return clean_env(HITL_BRIDGE_URL=daemon.url, HITL_BRIDGE_TOKEN=token, **extra)


def create(daemon: Served, **body: Any) -> str:
    """A request through the API (confirm "Go?" unless `questions` say otherwise); its id."""
    with daemon.client() as client:
        return client.create({"title": "Deploy", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}],
                              **body})
