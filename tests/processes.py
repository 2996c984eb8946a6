"""Servers the tests start as child processes (a Mastra app, `langgraph dev`): waiting until
one serves, with a deadline, and saying why when it does not."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import httpx


def wait_until_serving(process: subprocess.Popen[bytes], url: str, *, within: float, what: str,
                       log_tail: Callable[[], str]) -> None:
    """Poll `url` until it answers 200. Raise RuntimeError with the log's tail when the
    process exits first or `within` seconds pass (the caller stops the process then)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited early:\n{log_tail()}")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)  # polling a subprocess's readiness with a deadline: it gives no event
    raise RuntimeError(f"{what} was not ready in {within:.0f} s:\n{log_tail()}")
