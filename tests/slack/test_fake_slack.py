"""The fake Slack Web API refuses what Slack refuses, so tests against it mean something."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_api import FakeSlack

BLOCKS = [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as server:
        yield server


def client(fake: FakeSlack, token: str | None = None) -> AsyncWebClient:
    return AsyncWebClient(token=token or fake.bot_token, base_url=fake.api_url)


async def test_tokens_are_checked(fake: FakeSlack) -> None:
    assert (await client(fake).auth_test())["user_id"] == "U0BRIDGE"
    with pytest.raises(SlackApiError) as err:
        await client(fake, "xoxb-wrong").chat_postMessage(channel="#deploys", text="x")
    assert err.value.response["error"] == "invalid_auth"
    assert fake.messages == {}
    with pytest.raises(SlackApiError):  # the bot token cannot open Socket Mode
        await client(fake).apps_connections_open(app_token=fake.bot_token)


async def test_post_update_and_block_limits(fake: FakeSlack) -> None:
    web = client(fake)
    posted = await web.chat_postMessage(channel="#deploys", text="x", blocks=BLOCKS,
                                        metadata={"event_type": "t", "event_payload": {"a": 1}})
    assert posted["channel"] == "C0DEPLOYS"
    assert fake.calls_of("chat.postMessage")[0].content_type == "application/json"
    stored = fake.messages[("C0DEPLOYS", posted["ts"])]
    assert stored["metadata"]["event_payload"] == {"a": 1}
    await web.chat_update(channel="C0DEPLOYS", ts=posted["ts"], text="y", blocks=[])
    assert stored["text"] == "y"
    too_many = BLOCKS * 51
    with pytest.raises(SlackApiError) as err:
        await web.chat_postMessage(channel="#deploys", text="x", blocks=too_many)
    assert err.value.response["error"] == "invalid_blocks"
    long_section = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
    with pytest.raises(SlackApiError):
        await web.chat_postMessage(channel="#deploys", text="x", blocks=long_section)
    with pytest.raises(SlackApiError) as err:
        await web.chat_postMessage(channel="#nowhere", text="x")
    assert err.value.response["error"] == "channel_not_found"


async def test_trigger_ids_expire_and_work_once(fake: FakeSlack) -> None:
    web = client(fake)
    view = {"type": "modal", "title": {"type": "plain_text", "text": "Hi"}, "blocks": BLOCKS}
    trigger = fake.new_trigger_id()
    assert (await web.views_open(trigger_id=trigger, view=view))["view"]["id"]
    with pytest.raises(SlackApiError) as err:
        await web.views_open(trigger_id=trigger, view=view)
    assert err.value.response["error"] == "exchanged_trigger_id"
    stale = fake.new_trigger_id()
    fake.age_trigger(stale, 3.5)
    with pytest.raises(SlackApiError) as err:
        await web.views_open(trigger_id=stale, view=view)
    assert err.value.response["error"] == "expired_trigger_id"
    long_title = dict(view, title={"type": "plain_text", "text": "x" * 25})
    with pytest.raises(SlackApiError):
        await web.views_open(trigger_id=fake.new_trigger_id(), view=long_title)


async def test_injected_429_is_retried_by_slack_sdk_after_retry_after(fake: FakeSlack) -> None:
    fake.inject("chat.postMessage", 429, retry_after=0)
    fake.inject("users.info", 503)
    web = client(fake)
    web.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=2))
    await web.chat_postMessage(channel="#deploys", text="x")
    statuses = [c.status for c in fake.calls_of("chat.postMessage")]
    assert statuses == [429, 200]
    with pytest.raises(SlackApiError) as err:
        await web.users_info(user="U0ALICE")
    assert err.value.response.status_code == 503


async def test_per_channel_rate_limit(fake: FakeSlack) -> None:
    fake.post_interval_s = 60
    web = client(fake)
    await web.chat_postMessage(channel="#deploys", text="1")
    await web.chat_postMessage(channel="#incidents", text="1")  # another channel: fine
    with pytest.raises(SlackApiError) as err:
        await web.chat_postMessage(channel="#deploys", text="2")
    assert err.value.response.status_code == 429
    assert int(err.value.response.headers["Retry-After"]) >= 59


async def test_directory_calls(fake: FakeSlack) -> None:
    web = client(fake)
    assert (await web.conversations_open(users="U0BOB"))["channel"]["id"] == "DBOB"[0] + "0BOB"
    assert (await web.users_info(user="U0BOB"))["user"]["name"] == "bob"
    groups = (await web.usergroups_list())["usergroups"]
    assert groups[0]["handle"] == "oncall-group"
    assert (await web.usergroups_users_list(usergroup="S0ONCALL"))["users"] == ["U0ALICE"]


async def test_socket_mode_hello_and_ack(fake: FakeSlack) -> None:
    opened = await client(fake, fake.app_token).apps_connections_open(app_token=fake.app_token)
    async with aiohttp.ClientSession() as session, session.ws_connect(opened["url"]) as ws:
        hello = json.loads((await ws.receive()).data)
        assert hello["type"] == "hello"

        async def answer() -> None:
            envelope = json.loads((await ws.receive()).data)
            await ws.send_str(json.dumps({"envelope_id": envelope["envelope_id"], "payload": {"ok": 1}}))

        import asyncio
        task = asyncio.create_task(answer())
        ack = await fake.send_socket_envelope("interactive", {"type": "block_actions"})
        await task
        assert ack["payload"] == {"ok": 1}
