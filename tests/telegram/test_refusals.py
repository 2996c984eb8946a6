"""Hostile and mistaken input from people: forged callbacks, strangers, closed requests,
edits, unknown chats, people who never pressed Start. Refused clearly, nothing breaks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from hitl_bridge_client import AsyncClient

from bridge.cli import render
from tests.fakes.telegram_api import FakeTelegram, Person
from tests.harness import wait_for
from tests.telegram.helpers import closed, last_text_to, posted_message, submit, telegram_bridge

CONFIRM = {"title": "Deploy", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Ship?"}]}


async def alert_for(fake: FakeTelegram, update: dict[str, Any]) -> dict[str, Any]:
    query_id = update["callback_query"]["id"]
    answer: dict[str, Any] = await fake.wait_for(lambda: fake.callback_answers.get(query_id))
    return answer


async def test_forged_callbacks_are_refused_and_the_bot_keeps_working(tmp_path: Path, fake: FakeTelegram) -> None:
    fake.add_group(-1001, "ops")
    fake.add_group(-1002, "other")
    ann = fake.person(42, "Ann")
    choice = {"title": "Pick", "questions": [{"id": "c", "kind": "choice", "prompt": "?", "options": ["a", "b"]}]}
    async with telegram_bridge(tmp_path, fake, notify=["telegram:-1001", "telegram:-1002"]) as daemon:
        rid = await submit(daemon, choice)
        here = await posted_message(fake, -1001, "Pick")
        there = await posted_message(fake, -1002, "Pick")
        token = ann.buttons(here)[0]["callback_data"].split("|")[0]
        forged = [
            "hello", "", "x" * 200, "A" * 16 + "|y",  # garbage, empty, oversized, unknown token
            f"{token}|o2", f"{token}|o999", f"{token}|y", f"{token}|t0", f"{token}|a",  # wrong action
        ]
        for data in forged:
            answer = await alert_for(fake, await ann.press_raw(here, data))
            assert answer["show_alert"] is True and "not valid" in answer["text"], data
        # a real token, used from another chat than it was posted to
        answer = await alert_for(fake, await ann.press_raw(there, f"{token}|o0"))
        assert "not valid" in answer["text"]
        request = await daemon.store.get_request(rid)
        assert request is not None and request.is_open
        await ann.press(there, "b")  # the real button still works
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.values == {"c": "b"}


async def test_stranger_is_refused_and_recorded(tmp_path: Path, fake: FakeTelegram) -> None:
    fake.add_group(-1001, "ops")
    ann, bob = fake.person(42, "Ann"), fake.person(43, "Bob")
    async with telegram_bridge(tmp_path, fake, notify=["telegram:-1001"], responders=["telegram:42"]) as daemon:
        rid = await submit(daemon, CONFIRM)
        message = await posted_message(fake, -1001, "Deploy")
        answer = await alert_for(fake, await bob.press(message, "Approve"))
        assert answer["show_alert"] is True and "not allowed" in answer["text"]
        events = await daemon.store.list_events(rid)
        refused = [e for e in events if e.kind == "refused"]
        assert refused and refused[0].actor == "telegram:43" and refused[0].data["name"] == "Bob"
        await ann.press(message, "Approve")
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.responder.user_id == "42"


async def test_a_group_as_responders_lets_its_members_answer(tmp_path: Path, fake: FakeTelegram) -> None:
    fake.add_group(-1001, "ops")
    fake.add_group(-1009, "managers", kind="supergroup",
                   members={42: "member", 44: "administrator", 45: "left", 46: "kicked", 47: "restricted"})
    people = {uid: fake.person(uid, name) for uid, name in
              [(42, "Ann"), (43, "Bob"), (44, "Cid"), (45, "Dee"), (46, "Eve"), (47, "Flo")]}
    async with telegram_bridge(tmp_path, fake, notify=["telegram:-1001"], responders=["telegram:-1009"]) as daemon:
        rid = await submit(daemon, CONFIRM)
        message = await posted_message(fake, -1001, "Deploy")
        for uid in (43, 45, 46):  # a stranger, someone who left, someone banned
            answer = await alert_for(fake, await people[uid].press(message, "Approve"))
            assert "not allowed" in answer["text"], uid
        refused = [e.actor for e in await daemon.store.list_events(rid) if e.kind == "refused"]
        assert refused == ["telegram:43", "telegram:45", "telegram:46"]
        assert (await daemon.store.get_request(rid)).is_open  # type: ignore[union-attr]
        await people[47].press(message, "Approve")  # restricted, but still in the group
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.responder.user_id == "47"
        checks = len(fake.calls_of("getChatMember"))
        rid = await submit(daemon, {**CONFIRM, "title": "Deploy again"})
        message = await posted_message(fake, -1001, "Deploy again")
        answer = await alert_for(fake, await people[43].press(message, "Approve"))
        assert "not allowed" in answer["text"]
        await people[47].press(message, "Approve")  # the answer for 47 is cached
        await closed(daemon, rid)
        assert len(fake.calls_of("getChatMember")) == checks
        # the bot was removed from the group: nobody there is taken for a member
        del fake.chats[-1009]
        rid = await submit(daemon, {**CONFIRM, "title": "Deploy once more"})
        message = await posted_message(fake, -1001, "Deploy once more")
        answer = await alert_for(fake, await people[44].press(message, "Approve"))
        assert "not allowed" in answer["text"]


async def test_second_click_and_closed_requests(tmp_path: Path, fake: FakeTelegram) -> None:
    fake.add_group(-1001, "ops")
    ann, bob = fake.person(42, "Ann"), fake.person(43, "Bob")
    async with telegram_bridge(tmp_path, fake, notify=["telegram:-1001"]) as daemon:
        rid = await submit(daemon, CONFIRM)
        message = await posted_message(fake, -1001, "Deploy")
        snapshot = dict(fake.message(-1001, message["message_id"]))  # buttons as Bob still sees them
        await ann.press(message, "Approve")
        await closed(daemon, rid)
        answer = await alert_for(fake, await bob.press_raw(snapshot, snapshot["reply_markup"]["inline_keyboard"][0][1]
                                                           ["callback_data"]))
        assert answer["show_alert"] is True and "Already" in answer["text"] and "Ann" in answer["text"]
        request = await daemon.store.get_request(rid)
        assert request is not None and request.answer is not None and request.answer.values == {"ok": "yes"}

        other = await submit(daemon, {**CONFIRM, "title": "Rollback"})
        second = dict(await posted_message(fake, -1001, "Rollback"))  # a copy: the fake edits in place
        async with httpx.AsyncClient(base_url=daemon.base_url) as client:
            resp = await client.post(f"/v1/requests/{other}/cancel", json={"reason": "run deleted"})
            assert resp.status_code == 200, resp.text
        edited = await fake.wait_for(lambda: "Cancelled" in fake.message(-1001, second["message_id"])["text"]
                                     and fake.message(-1001, second["message_id"]))
        assert "reply_markup" not in edited
        answer = await alert_for(fake, await bob.press_raw(second, second["reply_markup"]["inline_keyboard"][0][0]
                                                           ["callback_data"]))
        assert "cancelled" in answer["text"]


async def test_never_pressed_start_is_undeliverable_not_failed(tmp_path: Path, fake: FakeTelegram,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    fake.person(42, "Ann")
    fake.person(77, "Zed", started=False)
    async with telegram_bridge(tmp_path, fake, notify=["telegram:42", "telegram:77", "telegram:-555"]) as daemon:
        rid = await submit(daemon, CONFIRM)
        await posted_message(fake, 42, "Deploy")

        async def failed_posts() -> list[Any]:
            return [p for p in await daemon.store.list_posts(rid) if not p.ok]
        posts = await wait_for(lambda: _two(failed_posts), 10)
        by_target = {p.target: p.error for p in posts}
        assert "never pressed Start" in by_target["telegram:77"]
        assert "chat not found" in by_target["telegram:-555"].lower()
        request = await daemon.store.get_request(rid)
        assert request is not None and request.state.value == "posted"
        assert any("never pressed Start" in r.getMessage() for r in caplog.records)
        async with AsyncClient(daemon.base_url, token=daemon.settings.http.first_token or "") as client:
            shown = render.show(await client.get(rid), await client.events(rid))  # as `hitl-bridge show`
        assert "telegram:77: FAILED: undeliverable" in shown


async def _two(get: Any) -> list[Any] | None:
    posts: list[Any] = await get()
    return posts if len(posts) >= 2 else None


async def test_edits_unknown_chats_and_non_text(tmp_path: Path, fake: FakeTelegram) -> None:
    fake.add_group(-1009, "unrelated")
    ann = fake.person(42, "Ann")
    stranger = fake.person(99, "Stranger")
    async with telegram_bridge(tmp_path, fake) as daemon:
        rid = await submit(daemon, {"title": "Name", "questions": [{"kind": "text", "prompt": "Name?"}]})
        message = await posted_message(fake, 42, "Name")
        sent = await ann.reply(message, "first try")
        await closed(daemon, rid)
        await ann.edit(sent, "second try")  # edits are not read
        await last_text_to(fake, 42, "Edits are not read")
        await stranger.say("hello bot")  # a private chat with nothing open
        await last_text_to(fake, 99, "Nothing here is waiting")
        before = len(fake.calls_of("sendMessage"))
        await stranger.say("chatting in a group", chat_id=-1009)  # groups: ignored silently
        await fake.push({"message": {"message_id": 9999, "date": 0, "chat": {"id": 42, "type": "private"},
                                     "from": ann.user, "photo": [{"file_id": "x", "file_unique_id": "y",
                                                                 "width": 1, "height": 1}]}})
        await last_text_to(fake, 42, "Nothing here is waiting")
        assert not [c for c in fake.calls_of("sendMessage")[before:] if c.params["chat_id"] == "-1009"]
        request = await daemon.store.get_request(rid)
        assert request is not None and request.answer is not None
        assert request.answer.values == {"answer": "first try"}
        await ann.start()  # plain /start says hello with the id to configure
        await last_text_to(fake, 42, "telegram:42")


async def test_quorum_counts_distinct_people(tmp_path: Path, fake: FakeTelegram) -> None:
    fake.add_group(-1001, "ops")
    people: list[Person] = [fake.person(42, "Ann"), fake.person(43, "Bob")]
    async with telegram_bridge(tmp_path, fake, notify=["telegram:-1001"], quorum=2) as daemon:
        rid = await submit(daemon, CONFIRM)
        message = await posted_message(fake, -1001, "Deploy")
        first = await alert_for(fake, await people[0].press(message, "Approve"))
        assert "Vote recorded" in first["text"]
        again = await alert_for(fake, await people[0].press(message, "Approve"))
        assert "Vote recorded" in again["text"]
        request = await daemon.store.get_request(rid)
        assert request is not None and request.is_open
        await people[1].press(message, "Approve")
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.values == {"ok": "yes"}
