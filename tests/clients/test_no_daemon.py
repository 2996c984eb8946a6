"""A newcomer's first `ask("Deploy?")` with no daemon running: the client says so at once (a
warning naming the URL) and gives up on creating the request after a short bounded retry, with an
error naming the URL and HITL_BRIDGE_URL, instead of waiting silently for 300 s."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from hitl_bridge_client import AsyncClient, BridgeUnavailable

from tests.harness import make_settings, running_bridge, wait_for

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


async def test_a_caller_that_asks_for_it_waits_to_create(tmp_path: Path) -> None:
    """`hitl-bridge mcp --give-up-after` keeps its meaning: its client waits to create too."""
    url = free_url()
    client = AsyncClient(url, unavailable_after=60, create_unavailable_after=60)
    asking = asyncio.create_task(client.ask("Deploy once it is up?"))
    settings = make_settings(tmp_path, {"http": {"listen": url.removeprefix("http://")}})
    async with running_bridge(tmp_path, settings=settings) as bridge:
        posted = await wait_for(lambda: bridge.store.list_requests(), 30)
        async with httpx.AsyncClient(base_url=bridge.base_url) as http:
            answered = await http.post(f"/v1/requests/{posted[0].id}/answer", json={"value": "yes"})
            assert answered.status_code == 200, answered.text
        assert (await asking).value == "yes"
    await client.aclose()
