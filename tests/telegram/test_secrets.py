"""Secrets: only in a private chat with an allowed responder, deleted right after reading,
absent from the store file, the logs and every API call the bot made."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.helpers import closed, last_text_to, posted_message, submit, telegram_bridge

SECRET = "hunter2-Zq9!xK"  # distinctive, to search for


def assert_nowhere(secret: str, fake: FakeTelegram, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    for call in fake.calls:
        assert secret not in call.body, f"secret sent to Telegram in {call.method}"
    for record in caplog.records:
        assert secret not in record.getMessage(), f"secret logged by {record.name}"
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"secret stored in clear in {path.name}"


@pytest.mark.parametrize("mode", ["polling", "webhook"])
async def test_secret_in_a_group_goes_to_private_chat(tmp_path: Path, fake: FakeTelegram, mode: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake.add_group(-1001, "ops")
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake, mode=mode, notify=["telegram:-1001"],
                               responders=["telegram:42"]) as daemon:
        rid = await submit(daemon, {"title": "DB password", "questions": [
            {"id": "pw", "kind": "secret", "prompt": "Password for prod?"}]})
        message = await posted_message(fake, -1001, "DB password")
        button = ann.buttons(message)[0]
        assert "callback_data" not in button and button["url"].startswith("https://t.me/hitl_test_bot?start=")
        token = parse_qs(urlparse(button["url"]).query)["start"][0]
        await ann.start(token)  # opens the private chat
        ask = await last_text_to(fake, 42, "1/1")
        await ann.reply(ask, SECRET)
        await last_text_to(fake, 42, "Secret received")
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.responder.user_id == "42"
        assert request.redacted_answer() == {"pw": "[secret]"}
        secret_message = next(m for (c, _), m in fake.messages.items() if c == 42 and m.get("text") == SECRET)
        assert (42, secret_message["message_id"]) in fake.deleted
        await fake.wait_for(lambda: "Secret provided by Ann" in fake.message(-1001, message["message_id"])["text"])
        assert SECRET not in fake.message(-1001, message["message_id"])["text"]
    assert_nowhere(SECRET, fake, tmp_path, caplog)


async def test_secret_in_a_private_chat_by_reply(tmp_path: Path, fake: FakeTelegram,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake, responders=["telegram:42"]) as daemon:
        rid = await submit(daemon, {"title": "API key", "questions": [{"kind": "secret", "prompt": "Key?"}]})
        message = await posted_message(fake, 42, "API key")
        update = await ann.reply(message, SECRET)
        await last_text_to(fake, 42, "Secret received")
        await closed(daemon, rid)
        assert (42, update["message"]["message_id"]) in fake.deleted
    assert_nowhere(SECRET, fake, tmp_path, caplog)


async def test_deep_link_refused_for_someone_not_allowed(tmp_path: Path, fake: FakeTelegram) -> None:
    fake.add_group(-1001, "ops")
    fake.person(42, "Ann")
    bob = fake.person(43, "Bob")
    async with telegram_bridge(tmp_path, fake, notify=["telegram:-1001"], responders=["telegram:42"]) as daemon:
        rid = await submit(daemon, {"title": "Token", "questions": [{"kind": "secret", "prompt": "Token?"}]})
        message = await posted_message(fake, -1001, "Token")
        token = parse_qs(urlparse(bob.buttons(message)[0]["url"]).query)["start"][0]
        await bob.start(token)
        await last_text_to(fake, 43, "not allowed")
        assert not [m for m in fake.sent_to(43) if "1/1" in m["text"]]  # never asked
        events = await daemon.store.list_events(rid)
        assert any(e.kind == "refused" and e.actor == "telegram:43" for e in events)
        await bob.start("A" * 16)  # a guessed token
        await last_text_to(fake, 43, "not valid")


async def test_secret_never_asked_in_a_private_chat_of_someone_not_allowed(tmp_path: Path, fake: FakeTelegram) -> None:
    bob = fake.person(43, "Bob")
    async with telegram_bridge(tmp_path, fake, notify=["telegram:43"], responders=["telegram:42"]) as daemon:
        rid = await submit(daemon, {"title": "Key", "questions": [{"kind": "secret", "prompt": "Key?"}]})
        message = await posted_message(fake, 43, "Key")
        assert "Only the request's responders" in message["text"]
        assert fake.calls_of("sendMessage")[-1].params.get("reply_markup") is None
        await bob.reply(message, SECRET)  # not a prompt: nothing recorded
        await last_text_to(fake, 43, "Nothing here is waiting")
        request = await daemon.store.get_request(rid)
        assert request is not None and request.is_open
