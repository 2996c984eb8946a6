"""Sending (adapters.slack.sender): every way a Slack call fails reaches the channel as one
named error, `SlackCallFailed`, against the fake Slack Web API."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.calls import ChannelPacer, Retrier, SlackCallFailed
from adapters.slack.sender import SlackSender
from tests.fakes.slack_api import FakeSlack

BLOCKS = [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]
VIEW = {"type": "modal", "title": {"type": "plain_text", "text": "Hi"}, "blocks": BLOCKS}


def sender_for(api_url: str, token: str) -> SlackSender:
    client = AsyncWebClient(token=token, base_url=api_url, timeout=2)
    return SlackSender(client, Retrier(max_attempts=2, backoff_s=0), ChannelPacer(0))


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as server:
        yield server


async def test_what_slack_refuses_is_a_slack_call_failed(fake: FakeSlack) -> None:
    sender = sender_for(fake.api_url, fake.bot_token)
    with pytest.raises(SlackCallFailed) as err:
        await sender.post_request("#nowhere", what="post", text="x", blocks=BLOCKS, metadata={})
    assert err.value.code == "channel_not_found" and not err.value.network
    stale = fake.new_trigger_id()
    fake.age_trigger(stale, 3.5)
    with pytest.raises(SlackCallFailed) as err:
        await sender.open_view(stale, VIEW)
    assert err.value.code == "expired_trigger_id"
    assert len(fake.calls_of("views.open")) == 1  # a trigger id is never retried
    with pytest.raises(SlackCallFailed) as err:
        await sender_for(fake.api_url, "xoxb-wrong").whoami()
    assert err.value.code == "invalid_auth"
    fake.inject("conversations.history", 200, error="not_in_channel")
    with pytest.raises(SlackCallFailed) as err:
        await sender.recent_messages("C0DEPLOYS")
    assert err.value.code == "not_in_channel"


async def test_what_slack_accepts_comes_back_as_data(fake: FakeSlack) -> None:
    sender = sender_for(fake.api_url, fake.bot_token)
    assert (await sender.whoami())["user_id"] == "U0BRIDGE"
    posted = await sender.post_request("#deploys", what="post", text="x", blocks=BLOCKS,
                                       metadata={"event_type": "t", "event_payload": {"a": 1}})
    await sender.update_message(posted["channel"], posted["ts"], text="y", blocks=[])
    await sender.reply_in_thread(posted["channel"], posted["ts"], "later", what="reminder")
    assert [m["text"] for m in fake.channel_messages("C0DEPLOYS")] == ["y"]
    assert [m["text"] for m in fake.messages.values() if m.get("thread_ts") == posted["ts"]] == ["later"]
    assert any(m.get("metadata") for m in await sender.recent_messages(posted["channel"]))


async def test_an_unreachable_slack_is_a_network_failure() -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    sender = sender_for(f"http://127.0.0.1:{port}/api/", "xoxb-1")
    async with aiohttp.ClientSession() as session:
        sender.client.session = session
        with pytest.raises(SlackCallFailed) as err:
            await sender.whoami()
        assert err.value.network
        with pytest.raises(SlackCallFailed) as err:
            await sender.open_view("1.2", VIEW)
        assert err.value.network
        with pytest.raises(SlackCallFailed) as err:
            await sender.ephemeral("C0DEPLOYS", "U0ALICE", "hi")
        assert err.value.network and "after 2 attempts" in str(err.value)
