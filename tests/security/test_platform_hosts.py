"""Slack and Telegram call the bridge by its public name: the Host check lets those through
(the hosts of `http.public_url` and `telegram.webhook_url`) and nothing else."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import wait_for
from tests.slack.conftest import SIGNING_SECRET, confirm_body, slack_bridge
from tests.slack.person import Person as SlackPerson
from tests.telegram.helpers import closed, confirm, posted_message, submit, telegram_bridge


async def test_slack_clicks_arrive_through_the_public_name(tmp_path: Path) -> None:
    public = {"http": {"public_url": "https://hitl.example.test"}}
    async with FakeSlack() as fake, slack_bridge(tmp_path, fake, extra=public) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        events = f"{b.daemon.base_url}/slack/events"
        async with httpx.AsyncClient(headers={"Host": "evil.example"}) as client:
            refused = await SlackPerson(fake, client, events, SIGNING_SECRET).click(message, "hitl:approve")
        assert refused.status_code == 400
        assert (await b.stored(rid)).is_open
        async with httpx.AsyncClient(headers={"Host": "hitl.example.test"}) as client:  # what Slack sends
            clicked = await SlackPerson(fake, client, events, SIGNING_SECRET).click(message, "hitl:approve")
        assert clicked.status_code == 200
        answered = await b.closed(rid)
        assert answered.answer is not None and answered.answer.values == {"ok": "yes"}


async def test_telegram_webhook_arrives_through_its_public_name(tmp_path: Path) -> None:
    fake = FakeTelegram(per_chat_interval=0.0)
    await fake.start()
    try:
        ann = fake.person(42, "Ann")
        public = {"telegram": {"webhook_url": "https://bot.example.test/telegram/webhook"}}
        async with telegram_bridge(tmp_path, fake, mode="webhook", extra=public) as daemon:
            await wait_for(lambda: fake.webhook_url == "https://bot.example.test/telegram/webhook")
            fake.webhook_resolves_to = f"127.0.0.1:{daemon.port}"  # the public name points here
            rid = await submit(daemon, confirm("Restart the API?"))
            message = await posted_message(fake, 42, "Restart the API?")
            await ann.press(message, "Approve")
            request = await closed(daemon, rid)
            assert request.answer is not None and request.answer.values == {"answer": "yes"}
            assert fake.webhook_statuses == [200]
            async with httpx.AsyncClient() as client:  # the same update under another name: refused
                forged = await client.post(f"{daemon.base_url}/telegram/webhook", json={"update_id": 1},
                                           headers={"Host": "evil.example",
                                                    "X-Telegram-Bot-Api-Secret-Token": fake.webhook_secret})
            assert forged.status_code == 400
    finally:
        await fake.stop()
