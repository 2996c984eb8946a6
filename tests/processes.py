"""Child processes the tests start and wait on: `hitl-bridge serve` with its stderr followed
line by line, servers that answer once ready (a Mastra app, `langgraph dev`), and states of
other processes that give no event to wait on — each waited for with a deadline, saying why
when it does not come."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

T = TypeVar("T")


def poll_until(check: Callable[[], T], *, within: float, every: float = 0.02) -> T | None:
    """Call `check()` until it returns something truthy and return that; None once `within`
    seconds have passed. Only for what has no event to wait on (a file another process
    writes, a child's system call, a port starting to answer): the pause between looks is a
    poll interval under a deadline, never a guess at how long something takes."""
    deadline = time.monotonic() + within
    while not (found := check()):
        if time.monotonic() >= deadline:
            return None
        time.sleep(every)
    return found


def wait_until_serving(process: subprocess.Popen[bytes], url: str, *, within: float, what: str,
                       log_tail: Callable[[], str]) -> None:
    """Poll `url` until it answers 200. Raise RuntimeError with the log's tail when the
    process exits first or `within` seconds pass (the caller stops the process then)."""
    def serving() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited early:\n{log_tail()}")
        try:
            return httpx.get(url, timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    if not poll_until(serving, within=within, every=0.1):
        raise RuntimeError(f"{what} was not ready in {within:.0f} s:\n{log_tail()}")


class ServeChild:
    """A `hitl-bridge serve` child process: its stderr collected line by line, and the URL it
    says it listens on."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.url = ""
        self.changed = threading.Event()  # set at every line, and when stderr ends
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            found = re.search(r"listening on (http://\S+)", line)
            if found:
                self.url = found.group(1)
            self.changed.set()
        self.changed.set()

    def until(self, check: Callable[[], Any], within: float = 30.0, *, alive: bool = False) -> Any:
        """Wait for `check()` to hold, looking again at each line the daemon writes (and at
        least every 0.1 s, for what it does without a word), with a deadline; `alive`: the
        process must not end meanwhile."""
        deadline = time.monotonic() + within
        while not (found := check()):
            if alive:
                assert self.proc.poll() is None, "\n".join(self.lines)
            assert time.monotonic() < deadline, "\n".join(self.lines[-30:])
            self.changed.clear()
            self.changed.wait(0.1)
        return found


def stop_group(process: subprocess.Popen[bytes] | None) -> None:
    """Stop a server started with `start_new_session=True`, and every process it started:
    SIGTERM to its group, SIGKILL after 15 s."""
    import os
    import signal

    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


def file_tail(path: Path, lines: int = 40) -> str:
    """The last `lines` lines of a server's log file ("" when it cannot be read)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
