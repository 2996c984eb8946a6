"""Every question kind end to end: a request posted by the real slack_sdk to the fake Slack,
a simulated person clicking and submitting signed payloads, the answer stored, and every
copy of the message updated in place."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from tests.fakes.slack_api import FakeSlack
from tests.harness import refuse_request_updates, wait_for
from tests.slack.conftest import CHANNEL, confirm_body, slack_bridge


def text_of(message: dict[str, object]) -> str:
    return json.dumps(message.get("blocks"), ensure_ascii=False)


async def updated(fake: FakeSlack, message: dict[str, object], needle: str) -> str:
    key = (str(message["channel"]), str(message["ts"]))
    return str(await wait_for(lambda: needle in text_of(fake.messages[key]) and text_of(fake.messages[key]), 5))


async def test_approve_stores_the_answer_and_updates_every_copy(tmp_path: Path, fake: FakeSlack) -> None:
    route = {"notify": ["slack:#deploys", "slack:#incidents", "slack:@U0BOB"]}
    async with slack_bridge(tmp_path, fake, route=route) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        copies = [message, await b.message_of(rid, "C0INCIDENTS"), await b.message_of(rid, "D0BOB")]
        assert fake.calls_of("conversations.open")[0].args["users"] == "U0BOB"
        response = await b.person.click(message, "hitl:approve")
        assert response.status_code == 200
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.values == {"ok": "yes"}
        assert request.answer.responder.user_id == "U0ALICE" and request.answer.via == "slack"
        for copy in copies:
            text = await updated(fake, copy, "Approved by <@U0ALICE>")
            assert "hitl:approve" not in text  # controls removed


async def test_reject_opens_a_modal_and_keeps_the_reason(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        assert (await b.person.click(message, "hitl:reject")).status_code == 200
        view = await b.latest_view(1)
        assert view["callback_id"] == "hitl:reject"
        response = await b.person.submit(view, {"reason": "change freeze until Monday"})
        assert response.status_code == 200 and not response.content.strip(b"{}")
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.values == {"ok": "no"}
        assert request.answer.reason == "change freeze until Monday"
        await updated(fake, message, "Rejected by <@U0ALICE>")


@pytest.mark.parametrize(("options", "action", "option"), [
    (["eu", "us", "ap"], "hitl:choice:1", None),
    ([f"region-{i}" for i in range(8)], "hitl:select", "region-5"),
])
async def test_choice_buttons_and_select(tmp_path: Path, fake: FakeSlack, options: list[str],
                                         action: str, option: str | None) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create({"title": "Where?", "questions": [
            {"id": "region", "kind": "choice", "prompt": "Region?", "options": options}]})
        message = await b.message_of(rid)
        await b.person.click(message, action, option=option)
        request = await b.closed(rid)
        chosen = option or options[1]
        assert request.answer is not None and request.answer.values == {"region": chosen}
        await updated(fake, message, f"*{chosen}* chosen by <@U0ALICE>")


async def test_multi_choice_form_and_edit_in_one_modal(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create({"title": "Release", "questions": [
            {"id": "envs", "kind": "multi_choice", "prompt": "Where?", "options": ["dev", "stg", "prod"]},
            {"id": "ticket", "kind": "form", "prompt": "Ticket", "fields": [
                {"name": "id", "label": "Ticket id"}, {"name": "prio", "options": ["low", "high"]}]},
            {"id": "args", "kind": "edit", "prompt": "Arguments", "default": {"replicas": 3}},
        ]})
        message = await b.message_of(rid)
        await b.person.click(message, "hitl:open")
        view = await b.latest_view(1)
        args_block = next(x for x in view["blocks"] if x.get("block_id") == "q:args")
        assert json.loads(args_block["element"]["initial_value"]) == {"replicas": 3}  # pre-filled
        await b.person.submit(view, {"q:envs": ["prod", "dev"], "q:ticket:id": "OPS-7",
                                     "q:ticket:prio": "high", "q:args": '{"replicas": 5}'})
        request = await b.closed(rid)
        assert request.answer is not None
        assert request.answer.values == {"envs": ["dev", "prod"], "ticket": {"id": "OPS-7", "prio": "high"},
                                         "args": {"replicas": 5}}
        await updated(fake, message, "Answered by <@U0ALICE>")


async def test_modal_validation_errors_are_shown_inline(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create({"title": "Edit", "questions": [
            {"id": "args", "kind": "edit", "prompt": "Arguments", "default": {"replicas": 3}}]})
        message = await b.message_of(rid)
        await b.person.click(message, "hitl:open")
        view = await b.latest_view(1)
        response = await b.person.submit(view, {"q:args": "{replicas: five"})
        assert response.status_code == 200
        body = response.json()
        assert body["response_action"] == "errors" and "not valid JSON" in body["errors"]["q:args"]
        assert (await b.stored(rid)).is_open  # nothing recorded; the person fixes it
        response = await b.person.submit(view, {"q:args": '{"replicas": 4}'})
        assert not response.content.strip(b"{}")
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.values == {"args": {"replicas": 4}}


async def test_secret_is_never_echoed_stored_in_clear_or_logged(
    tmp_path: Path, fake: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "ghp_S3cr3tValue0123456789"
    async with slack_bridge(tmp_path, fake, extra={"secrets": {"key": "k" * 32}}) as b:
        rid = await b.create({"title": "Token please", "questions": [
            {"id": "token", "kind": "secret", "prompt": "GitHub token?"}]})
        message = await b.message_of(rid)
        await b.person.click(message, "hitl:open")
        view = await b.latest_view(1)
        assert secret not in view["private_metadata"]
        await b.person.submit(view, {"q:token": secret})
        await b.closed(rid)
        text = await updated(fake, message, "Secret provided by <@U0ALICE>")
        assert secret not in text
        assert all(secret not in json.dumps(c.args) for c in fake.calls)  # never sent to Slack
        raw_db = await asyncio.to_thread(
            lambda: b"".join(p.read_bytes() for p in tmp_path.rglob("bridge.db*")))
        assert secret.encode() not in raw_db  # sealed at rest
    assert secret not in caplog.text


async def test_thread_reply_answers_a_text_question(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create({"title": "Why?", "questions": [
            {"id": "why", "kind": "text", "prompt": "Why did the canary fail?"}]})
        message = await b.message_of(rid)
        response = await b.person.reply(message, "the DB migration was slow")
        assert response.status_code == 200
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.values == {"why": "the DB migration was slow"}
        assert request.answer.responder.name == "alice"  # looked up with users.info
        await updated(fake, message, "Answered by <@U0ALICE>")
        # a later reply is told, not recorded; chatter in other threads is ignored
        await b.person.as_user("U0BOB").reply(message, "me too")
        note = await wait_for(lambda: next((e for e in fake.ephemerals if e["user"] == "U0BOB"), None), 5)
        assert "already answered by alice" in str(note["text"])
        other = dict(message, ts="1699999999.000100")
        assert (await b.person.reply(other, "unrelated")).status_code == 200


async def test_thread_reply_the_store_refuses_is_not_lost_silently(tmp_path: Path, fake: FakeSlack) -> None:
    """Slack has had its ack before the reply is stored. When the database refuses the write
    (here: a trigger another connection puts on the table), the person is told to reply
    again, nothing half-written is kept, and the next reply is recorded."""
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create({"title": "Why?", "questions": [
            {"id": "why", "kind": "text", "prompt": "Why did the canary fail?"}]})
        message = await b.message_of(rid)
        [db] = list(tmp_path.rglob("bridge.db"))
        await asyncio.to_thread(refuse_request_updates, db, True)
        assert (await b.person.reply(message, "the DB migration was slow")).status_code == 200
        note = await wait_for(lambda: next((e for e in fake.ephemerals if e["user"] == "U0ALICE"), None), 5)
        assert "could not be recorded just now" in str(note["text"])
        request = await b.daemon.store.get_request(rid)
        assert request is not None and request.is_open and request.answer is None
        await asyncio.to_thread(refuse_request_updates, db, False)
        assert (await b.person.reply(message, "the DB migration was slow")).status_code == 200
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.values == {"why": "the DB migration was slow"}


async def test_text_reply_button_opens_a_modal(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create({"title": "Why?", "questions": [
            {"id": "why", "kind": "text", "prompt": "Why?"}]})
        message = await b.message_of(rid)
        await b.person.click(message, "hitl:open")
        view = await b.latest_view(1)
        await b.person.submit(view, {"q:why": "because"})
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.values == {"why": "because"}


async def test_long_context_details_modal(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(confirm_body(context={"script": "x" * 4000 + "TAIL"}))
        message = await b.message_of(rid)
        assert "TAIL" not in text_of(message)
        await b.person.click(message, "hitl:details")
        view = await b.latest_view(1)
        assert "TAIL" in "".join(x["text"]["text"] for x in view["blocks"])
        assert (await b.stored(rid)).is_open


async def test_channel_target_by_id(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake, route={"notify": [f"slack:{CHANNEL}"]}) as b:
        rid = await b.create(confirm_body())
        await b.message_of(rid)
