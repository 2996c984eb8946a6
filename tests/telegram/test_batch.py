"""Batches and `/away` through the fake Telegram: one message lists alike requests with a
toggle per item ("all but 3"), "Approve all N" answers each through the core, a four-eyes
item is refused on its own, and the message then shows a result per item."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.helpers import confirm, last_text_to, posts_recorded, request_of, submit, telegram_bridge

PEOPLE = {"people": {"ann": ["telegram:42"], "bob": ["telegram:77"]}}


async def test_twenty_alike_approved_at_once_but_one_and_four_eyes_alone(tmp_path: Path,
                                                                         fake: FakeTelegram) -> None:
    ann, eve = fake.person(42, "Ann"), fake.person(666, "Eve")
    async with telegram_bridge(tmp_path, fake, responders=["person:ann", "person:bob"], extra=PEOPLE,
                               forbid_self_approval=True) as daemon:
        ids = [await submit(daemon, confirm(f"Delete 'f{n}.txt'", tool="fs.delete",
                                            requested_by="person:ann" if n == 9 else "person:bob"))
               for n in range(20)]
        await posts_recorded(daemon)
        await ann.say("/batch")
        offer = await last_text_to(fake, 42, "alike requests wait for you")
        assert "20 alike" in offer["text"] and "Approve all 20" in [b["text"] for b in ann.buttons(offer)]

        await ann.press(offer, "3")  # leave the third out
        await fake.wait_for(lambda: "Approve all 19" in [b["text"] for b in ann.buttons(offer)])
        await eve.press_raw(offer, ann.buttons(offer)[-2]["callback_data"])  # not hers
        await eve.press_raw(offer, "hb:AAAAAAAAAAAAAAAA:all")  # forged
        await fake.wait_for(lambda: sum("not yours" in (a.get("text") or "")
                                        for a in fake.callback_answers.values()) == 2)
        assert [(await request_of(daemon, i)).is_open for i in ids[:2]] == [True, True]

        await ann.press(offer, "Approve all 19")
        await fake.wait_for(lambda: "Batch decided" in fake.message(42, offer["message_id"])["text"])
        text = fake.message(42, offer["message_id"])["text"]
        assert text.count("· answered") == 18 and text.count("· refused") == 1 and text.count("· skipped") == 1
        assert "someone else must approve" in text
        still_open = [i for i in ids if (await request_of(daemon, i)).is_open]
        assert still_open == [ids[2], ids[9]]
        event = next(e for e in await daemon.store.list_events(ids[0]) if e.kind == "answered")
        assert event.data["batch"].startswith("b_") and event.data["via"] == "telegram"


async def test_away_and_back(tmp_path: Path, fake: FakeTelegram) -> None:
    ann, bob = fake.person(42, "Ann"), fake.person(77, "Bob")
    async with telegram_bridge(tmp_path, fake, extra=PEOPLE) as daemon:
        until = (datetime.now(UTC) + timedelta(days=1)).isoformat()
        await ann.say(f"/away bob until {until}")
        assert "bob answers for you" in (await last_text_to(fake, 42, "away until"))["text"]
        await bob.say(f"/away ann until {until}")
        assert "loop" in (await last_text_to(fake, 77, "Not done"))["text"]
        await ann.say("/away bob until tomorrow")
        assert "is not a time" in (await last_text_to(fake, 42, "Not done"))["text"]
        await ann.say("/back")
        await last_text_to(fake, 42, "Welcome back.")
        assert await daemon.service.delegations() == []
