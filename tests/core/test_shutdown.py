"""Stopping the daemon has an overall deadline: a part that does not finish (here a post to a
Slack that does not answer) is named in the log and left behind, the store is closed, and
nothing acknowledged is lost: the next start posts the request."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path

import httpx
import pytest

from bridge.daemon import Daemon
from tests.fakes.slack_api import FakeSlack
from tests.harness import make_settings, running_bridge, wait_for
from tests.slack.conftest import CHANNEL, slack_section

BODY = {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy now?"}]}


async def test_stop_gives_up_on_a_stuck_part_at_its_deadline_and_loses_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with FakeSlack() as fake:
        config = {"slack": slack_section(fake, request_timeout_s=60),
                  "routes": [{"name": "deploys", "notify": ["slack:#deploys"]}]}
        fake.delays["chat.postMessage"] = 2  # Slack takes the post and answers far past the deadline
        daemon = Daemon(make_settings(tmp_path, config), stop_deadline_s=0.5)
        await daemon.start()
        async with httpx.AsyncClient(base_url=daemon.base_url) as client:
            created = await client.post("/v1/requests", json=BODY)
        assert created.status_code == 201, created.text  # acknowledged: it is in the store
        await wait_for(lambda: fake.calls_of("chat.postMessage"))  # the post is in flight
        with caplog.at_level(logging.ERROR, logger="hitl_bridge"):
            await asyncio.wait_for(daemon.stop(), 30)  # a hang guard: the log below is what tells
        said = [r.getMessage() for r in caplog.records if "still waiting" in r.getMessage()]
        assert len(said) == 1 and "background posts and updates" in said[0], said

        fake.delays.clear()
        async with running_bridge(tmp_path, config) as again:
            stored = await again.store.get_request(created.json()["id"])
            assert stored is not None and stored.is_open
            posted = await wait_for(lambda: again.store.list_posts(stored.id), 10)  # by the restart
            assert [p.ok for p in posted] == [True] and fake.channel_messages(CHANNEL)


async def test_a_second_stop_signal_exits_at_once(tmp_path: Path) -> None:
    """`hitl-bridge serve` waiting on a client that sent half a request: the first SIGTERM
    starts the bounded stop, the second ends the process there and then, saying why."""
    config = tmp_path / "hitl-bridge.yaml"
    config.write_text(json.dumps({"store": {"url": f"sqlite:///{tmp_path}/bridge.db"},
                                  "http": {"listen": "127.0.0.1:0"}, "sources": [{"type": "webhook"}]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HITL_BRIDGE", "SLACK_", "TELEGRAM_"))}
    proc = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "hitl-bridge"), "--config", str(config), "serve",
        cwd=tmp_path, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE)
    stderr = proc.stderr
    assert stderr is not None
    lines: list[str] = []

    async def until(needle: str) -> str:
        while True:
            line = (await asyncio.wait_for(stderr.readline(), 30)).decode()
            assert line, "".join(lines)
            lines.append(line)
            if needle in line:
                return line

    writer = None
    try:
        port = int((await until("listening on")).split("listening on http://127.0.0.1:")[1].split()[0])
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /v1/requests HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n{\"title\": ")  # and the rest never comes
        await writer.drain()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:  # it is being served
            await wait_for(lambda: _healthy(client))
        proc.send_signal(signal.SIGTERM)
        await until("shutting down")
        proc.send_signal(signal.SIGTERM)
        await until("a second stop signal: exiting now")
        assert await asyncio.wait_for(proc.wait(), 10) == 1
    finally:
        if writer is not None:
            writer.close()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _healthy(client: httpx.AsyncClient) -> bool:
    return (await client.get("/healthz")).status_code == 200
