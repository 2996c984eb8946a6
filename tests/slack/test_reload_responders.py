"""A reload never widens who may answer an open request, and a reload that narrows it
applies at once: Slack clicks on the real daemon (the fake Slack API), the config file
read again by the daemon's own reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import yaml

from bridge.config import load_settings
from tests.fakes.slack_api import FakeSlack
from tests.harness import running_bridge, wait_for
from tests.slack.conftest import SIGNING_SECRET, SlackBridge, confirm_body, slack_section
from tests.slack.person import Person


def config(tmp_path: Path, fake: FakeSlack, oncall: list[str]) -> dict[str, Any]:
    return {"store": {"url": f"sqlite:///{tmp_path}/bridge.db"}, "http": {"listen": "127.0.0.1:0"},
            "sources": [{"type": "webhook"}], "slack": slack_section(fake),
            "people": {"alice": ["slack:U0ALICE"], "bob": ["slack:U0BOB"]}, "groups": {"oncall": oncall},
            "routes": [{"name": "deploys", "notify": ["slack:#deploys"], "responders": ["group:oncall"]}]}


async def refused(fake: FakeSlack, user: str, count: int) -> None:
    await wait_for(lambda: sum(e["user"] == user and "not allowed to answer" in str(e["text"])
                               for e in fake.ephemerals) == count, 5)


async def test_a_reload_narrows_but_never_widens_who_may_answer(tmp_path: Path, fake: FakeSlack) -> None:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(yaml.safe_dump(config(tmp_path, fake, ["bob"])))
    async with running_bridge(tmp_path, settings=load_settings(str(path), env={})) as daemon, \
            httpx.AsyncClient(timeout=10) as http:
        b = SlackBridge(daemon, fake, http, Person(fake, http, f"{daemon.base_url}/slack/events", SIGNING_SECRET))
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)

        path.write_text(yaml.safe_dump(config(tmp_path, fake, ["bob", "alice"])))  # alice joins oncall
        assert await daemon.reload(env={})
        assert (await b.person.click(message, "hitl:approve")).status_code == 200  # alice (U0ALICE)
        await refused(fake, "U0ALICE", 1)  # she was not oncall when it was asked
        assert (await b.stored(rid)).is_open

        later = await b.create(confirm_body())  # asked after the reload: alice may answer it
        await b.person.click(await b.message_of(later), "hitl:approve")
        assert (await b.closed(later)).answer is not None

        path.write_text(yaml.safe_dump(config(tmp_path, fake, ["alice"])))  # bob leaves oncall
        assert await daemon.reload(env={})
        await b.person.as_user("U0BOB").click(message, "hitl:approve")
        await refused(fake, "U0BOB", 1)  # narrowing applies to the open request at once
        assert (await b.stored(rid)).is_open
