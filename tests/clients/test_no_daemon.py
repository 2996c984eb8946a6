"""A newcomer's first `ask("Deploy?")` with no daemon running: the client says so at once (a
warning naming the URL) and gives up on creating the request after a short bounded retry, with an
error naming the URL and HITL_BRIDGE_URL, instead of waiting silently for 300 s."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from hitl_bridge_client import AsyncClient, BridgeUnavailable

SCRIPT = """
import sys
from hitl_bridge_client import ask
try:
    ask("Deploy?")
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
    sys.exit(1)
"""


def free_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_ask_with_no_daemon_warns_at_once_then_fails_naming_the_url() -> None:
    url = free_url()
    env = {**os.environ, "HITL_BRIDGE_URL": url}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert f"no hitl-bridge daemon answers at {url} yet" in done.stderr
    assert done.stderr.count("no hitl-bridge daemon answers") == 1, done.stderr  # once, not per attempt
    assert done.stdout.startswith("BridgeUnavailable: could not create the request"), done.stdout
    assert url in done.stdout and "HITL_BRIDGE_URL" in done.stdout


async def test_the_async_client_fails_fast_too(caplog: pytest.LogCaptureFixture) -> None:
    url = free_url()
    with pytest.raises(BridgeUnavailable, match="HITL_BRIDGE_URL") as raised:
        await AsyncClient(url).ask("Deploy?")
    assert url in str(raised.value)
    assert [r.levelname for r in caplog.records if "no hitl-bridge daemon answers" in r.getMessage()] == ["WARNING"]
