"""Stopping the daemon has an overall deadline: a part that does not finish (here a post to a
Slack that does not answer) is named in the log and left behind, the store is closed, and
nothing acknowledged is lost: the next start posts the request."""

from __future__ import annotations

import asyncio
import logging
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
