"""`/pending`: what waits for an answer in this chat, and a button that shows it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.helpers import (
    closed,
    confirm,
    last_text_to,
    posted_message,
    posts_recorded,
    submit,
    telegram_bridge,
)

ROUTES = {"routes": [
    {"match": {"labels.team": "db"}, "notify": ["telegram:77"]},  # Bob's
    {"match": {}, "notify": ["telegram:42"]},  # Ann's
]}


async def test_pending_lists_this_chats_requests_and_shows_one_again(tmp_path: Path, fake: FakeTelegram) -> None:
    ann, bob = fake.person(42, "Ann"), fake.person(77, "Bob")
    async with telegram_bridge(tmp_path, fake, extra=ROUTES) as daemon:
        later = await submit(daemon, confirm("Deploy <web>", timeout_s=7200))
        await submit(daemon, confirm("Rotate keys", timeout_s=600))
        await submit(daemon, confirm("Drop table", labels={"team": "db"}))
        answered = await submit(daemon, confirm("Old question"))
        first = await posted_message(fake, 42, "Deploy <web>")
        await posted_message(fake, 77, "Drop table")
        await ann.press(await posted_message(fake, 42, "Old question"), "Approve")
        await closed(daemon, answered)

        await posts_recorded(daemon)

        await ann.say("/pending")
        listing = await last_text_to(fake, 42, "waiting for an answer here")
        assert "2 waiting" in listing["text"]
        assert listing["text"].index("Rotate keys") < listing["text"].index("Deploy <web>")  # soonest first
        assert "Drop table" not in listing["text"] and "Old question" not in listing["text"]
        assert "answer by" in listing["text"]
        assert [b["text"] for b in ann.buttons(listing)] == ["↪️ Rotate keys", "↪️ Deploy <web>"]


        def copies() -> list[dict[str, Any]]:
            return [x for x in fake.sent_to(42) if "Deploy <web>" in x["text"] and "OK?" in x["text"]]

        await ann.press(listing, "Deploy")
        await fake.wait_for(lambda: len(copies()) == 2)
        fresh = copies()[1]
        assert fresh["message_id"] > listing["message_id"]  # at the bottom of the chat
        await ann.press(listing, "Deploy")  # pressed again at once: not posted a third time
        await fake.wait_for(lambda: sum(a.get("text") == "It was just shown below." for a in
                                        fake.callback_answers.values()) == 1)
        await ann.press(fresh, "Approve")  # the fresh copy answers, and both copies are closed
        request = await closed(daemon, later)
        assert request.answer is not None and request.answer.values == {"answer": "yes"}
        for copy in (first, fresh):
            await fake.wait_for(lambda c=copy: "Approved by Ann" in fake.message(42, c["message_id"])["text"])
        assert len(copies()) == 2

        await posts_recorded(daemon)

        await bob.say("/pending")
        assert "1 waiting" in (await last_text_to(fake, 77, "waiting for an answer here"))["text"]
        await ann.press(listing, "Deploy")  # the listing is stale now: answered requests say so
        await fake.wait_for(lambda: any("Already answered by Ann" in (a.get("text") or "")
                                        for a in fake.callback_answers.values()))


async def test_pending_with_nothing_waiting_and_a_stranger_pressing(tmp_path: Path, fake: FakeTelegram) -> None:
    ann, eve = fake.person(42, "Ann"), fake.person(666, "Eve")
    async with telegram_bridge(tmp_path, fake, responders=["telegram:42"]) as daemon:
        assert [c for c, _ in fake.commands] == ["pending", "cancel", "batch", "away", "back", "start"]  # the / menu
        await posts_recorded(daemon)
        await eve.say("/pending")
        await last_text_to(fake, 666, "Nothing is waiting for an answer here.")
        rid = await submit(daemon, confirm("Deploy"))
        await posted_message(fake, 42, "Deploy")
        await posts_recorded(daemon)
        await ann.say("/pending")
        listing = await last_text_to(fake, 42, "Deploy")
        # a forwarded listing's button pressed by someone else, in another chat: not valid
        forged = dict(listing, chat={"id": 666, "type": "private"})
        await eve.press_raw(forged, ann.buttons(listing)[0]["callback_data"])
        await fake.wait_for(lambda: any("not valid" in (a.get("text") or "") for a in fake.callback_answers.values()))
        assert len([x for x in fake.sent_to(666) if "Deploy" in x["text"]]) == 0
        assert (await daemon.store.get_request(rid)).is_open  # type: ignore[union-attr]


async def test_a_refused_command_menu_does_not_stop_the_bot(
    tmp_path: Path, fake: FakeTelegram, caplog: pytest.LogCaptureFixture
) -> None:
    fake.fail("setMyCommands", 500, times=10)  # more than the retries
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake) as daemon:
        assert fake.commands == []
        rid = await submit(daemon, confirm("Deploy"))
        await ann.press(await posted_message(fake, 42, "Deploy"), "Approve")
        assert (await closed(daemon, rid)).answer is not None
    assert "could not set the command menu" in caplog.text


async def test_pending_in_a_private_chat_finds_group_requests_naming_you(tmp_path: Path, fake: FakeTelegram) -> None:
    """Posted to the team group only: a named responder can fetch it into their private chat
    (and answer there, away from the group's noise); others do not see it listed."""
    fake.add_group(-1001, "ops")
    ann, bob = fake.person(42, "Ann"), fake.person(77, "Bob")
    routes = {"routes": [
        {"match": {"labels.who": "ann"}, "notify": ["telegram:-1001"], "responders": ["telegram:42"]},
        {"match": {}, "notify": ["telegram:-1001"]},  # anyone may answer: not listed privately
    ]}
    async with telegram_bridge(tmp_path, fake, extra=routes) as daemon:
        mine = await submit(daemon, confirm("Deploy web", labels={"who": "ann"}))
        await submit(daemon, confirm("Team lunch?"))
        await posted_message(fake, -1001, "Deploy web")
        await posted_message(fake, -1001, "Team lunch?")

        await posts_recorded(daemon)
        await ann.say("/pending", chat_id=-1001)  # in the group: both copies there
        assert "2 waiting" in (await last_text_to(fake, -1001, "waiting for an answer here"))["text"]
        await ann.say("/pending")  # in her private chat: only the one naming her
        listing = await last_text_to(fake, 42, "waiting for an answer here")
        assert "1 waiting" in listing["text"] and "Team lunch" not in listing["text"]
        await posts_recorded(daemon)
        await bob.say("/pending")
        await last_text_to(fake, 77, "Nothing is waiting for an answer here.")

        await ann.press(listing, "Deploy web")
        private_copy = await fake.wait_for(
            lambda: next((m for m in fake.sent_to(42) if "Deploy web" in m["text"] and "OK?" in m["text"]), None))
        await ann.press(private_copy, "Approve")
        request = await closed(daemon, mine)
        assert request.answer is not None and request.answer.values == {"answer": "yes"}
        group_copy = await posted_message(fake, -1001, "Deploy web")
        await fake.wait_for(lambda: "Approved by Ann" in fake.message(-1001, group_copy["message_id"])["text"])
