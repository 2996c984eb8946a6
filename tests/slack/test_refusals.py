"""Only the right people, once, with genuine payloads: responders, double clicks, forged,
stale and replayed signatures, unknown and closed requests, hostile bodies."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import urlencode

from tests.fakes.slack_api import FakeSlack
from tests.harness import wait_for
from tests.slack.conftest import CHANNEL, confirm_body, slack_bridge


async def ephemeral_to(fake: FakeSlack, user: str, needle: str) -> dict[str, object]:
    found: dict[str, object] = await wait_for(lambda: next(
        (e for e in fake.ephemerals if e["user"] == user and needle in str(e["text"])), None), 5)
    return found


async def test_responders_are_enforced_with_usergroups(tmp_path: Path, fake: FakeSlack) -> None:
    route = {"responders": ["slack:U0BOB", "slack:@oncall-group"]}
    async with slack_bridge(tmp_path, fake, route=route) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        mallory = b.person.as_user("U0MALLORY")
        assert (await mallory.click(message, "hitl:approve")).status_code == 200
        await ephemeral_to(fake, "U0MALLORY", "not allowed to answer")
        assert (await b.stored(rid)).is_open
        events = await b.daemon.store.list_events(rid)
        assert any(e.kind == "refused" and e.actor == "slack:U0MALLORY" for e in events)
        # a modal is not even opened for someone who may not answer
        await mallory.click(message, "hitl:reject")
        await wait_for(lambda: sum("not allowed" in str(e["text"]) for e in fake.ephemerals) == 2, 5)
        assert fake.views == {}
        # alice is in @oncall-group (expanded through usergroups.users.list, then cached)
        await b.person.click(message, "hitl:approve")
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.responder.user_id == "U0ALICE"
        await b.person.as_user("U0BOB").click(message, "hitl:approve")
        await ephemeral_to(fake, "U0BOB", "already")
        assert len(fake.calls_of("usergroups.users.list")) == 1


async def test_second_click_gets_already_answered(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        await b.person.click(message, "hitl:approve")
        await b.closed(rid)
        bob = b.person.as_user("U0BOB")
        await bob.click(message, "hitl:reject")  # the stale message still shows the buttons
        note = await ephemeral_to(fake, "U0BOB", "already answered by alice")
        assert note["channel"] == CHANNEL
        await bob.click(message, "hitl:approve")
        await wait_for(lambda: sum("already" in str(e["text"]) for e in fake.ephemerals) == 2, 5)
        request = await b.stored(rid)
        assert request.answer is not None and request.answer.responder.user_id == "U0ALICE"
        assert fake.views == {}


async def test_forged_stale_and_replayed_signatures(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        payload = b.person.block_actions(message, "hitl:approve")
        forged = await b.person.send(payload, secret="not-the-signing-secret")
        assert forged.status_code == 401
        stale = await b.person.send(payload, timestamp=int(time.time()) - 301)
        assert stale.status_code == 401
        body = urlencode({"payload": json.dumps(payload)}).encode()
        unsigned = await b.http.post(b.person.url, content=body,
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert unsigned.status_code == 401
        # a captured request replayed later than the window
        old = int(time.time()) - 600
        from tests.slack.person import sign
        replay = await b.person.send_raw(body, timestamp=old,
                                         signature=sign(b.person.signing_secret, str(old), body))
        assert replay.status_code == 401
        tampered = await b.person.send_raw(body.replace(b"U0ALICE", b"U0BOB__"),
                                           signature=sign(b.person.signing_secret,
                                                          str(int(time.time())), body))
        assert tampered.status_code == 401
        assert (await b.stored(rid)).is_open
        assert not [e for e in await b.daemon.store.list_events(rid) if e.kind in ("refused", "answered")]
        assert fake.ephemerals == []
        # a fresh, genuine replay of the same click is just a double click: one answer
        ok = await b.person.send(payload)
        again = await b.person.send(payload)
        assert ok.status_code == again.status_code == 200
        await b.closed(rid)
        await ephemeral_to(fake, "U0ALICE", "already answered")


async def test_unknown_and_closed_requests_get_a_polite_note(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        ghost = json.loads(json.dumps(message).replace(rid, "r_doesnotexist00"))
        assert (await b.person.click(ghost, "hitl:approve")).status_code == 200
        await ephemeral_to(fake, "U0ALICE", "not known")
        assert (await b.person.click(ghost, "hitl:reject")).status_code == 200
        await wait_for(lambda: sum("not known" in str(e["text"]) for e in fake.ephemerals) == 2, 5)
        # a modal submitted after the request was cancelled
        await b.person.click(message, "hitl:reject")
        view = await b.latest_view(1)
        cancel = await b.http.post(f"{b.daemon.base_url}/v1/requests/{rid}/cancel", json={})
        assert cancel.status_code == 200
        response = await b.person.submit(view, {"reason": "too late"})
        assert response.json()["response_action"] == "errors"
        assert "already cancelled" in response.json()["errors"]["reason"]
        # forged private_metadata
        forged = dict(view, private_metadata="{not json")
        response = await b.person.submit(forged, {"reason": "x"})
        assert response.json()["errors"]["reason"].startswith("This request is not known")
        await wait_for(lambda: "Cancelled" in json.dumps(
            fake.messages[(CHANNEL, message["ts"])]["blocks"]), 5)


async def test_hostile_bodies_are_refused_and_the_endpoint_keeps_serving(
    tmp_path: Path, fake: FakeSlack
) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        person = b.person
        for body, ctype in (
            (b"payload=%7Bnot-json", "application/x-www-form-urlencoded"),
            (b"payload=" + b"%5B1%2C2%5D", "application/x-www-form-urlencoded"),
            (b"\xff\xfe\x00garbage", "application/x-www-form-urlencoded"),
            (b'{"type": "event_callback", "event": 5}', "application/json"),
            (b"[]", "application/json"),
            (urlencode({"payload": json.dumps({"type": "block_actions", "actions": "x",
                                               "user": None})}).encode(),
             "application/x-www-form-urlencoded"),
            (urlencode({"payload": json.dumps({"type": "view_submission", "view": {
                "callback_id": "hitl:answer", "private_metadata": json.dumps({"r": rid}),
                "state": {"values": "nope"}}, "user": {"id": "U0ALICE"}})}).encode(),
             "application/x-www-form-urlencoded"),
        ):
            response = await person.send_raw(body, ctype)
            assert response.status_code < 500, (body, response.status_code)
        huge = b"payload=" + b"a" * 2_000_000
        assert (await person.send_raw(huge)).status_code == 413
        assert (await b.stored(rid)).is_open
        await person.click(message, "hitl:approve")  # still serving
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.values == {"ok": "yes"}


async def test_url_verification_challenge(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        body = json.dumps({"type": "url_verification", "challenge": "abc123", "token": "x"}).encode()
        response = await b.person.send_raw(body, "application/json")
        assert response.status_code == 200 and "abc123" in response.text


async def test_people_and_groups_as_responders_and_no_self_approval(tmp_path: Path, fake: FakeSlack) -> None:
    people = {"people": {"alice": ["slack:U0ALICE"], "bob": ["slack:U0BOB", "telegram:42"]},
              "groups": {"oncall": ["alice", "bob"]}}
    route = {"responders": ["group:oncall"], "forbid_self_approval": True}
    async with slack_bridge(tmp_path, fake, route=route, extra=people) as b:
        rid = await b.create(confirm_body(requested_by="alice"))
        message = await b.message_of(rid)
        await b.person.as_user("U0MALLORY").click(message, "hitl:approve")  # not in the group
        await ephemeral_to(fake, "U0MALLORY", "not allowed to answer")
        await b.person.click(message, "hitl:approve")  # alice asked for it herself
        await ephemeral_to(fake, "U0ALICE", "alice asked for this request: someone else must approve it")
        assert (await b.stored(rid)).is_open
        refusals = [e for e in await b.daemon.store.list_events(rid) if e.kind == "refused"]
        assert [e.data["reason"] for e in refusals] == ["not in responders", "self-approval"]
        await b.person.as_user("U0BOB").click(message, "hitl:approve")
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.responder.key == "slack:U0BOB"
        assert request.answer.responder.person == "bob"


async def test_quorum_counts_votes_and_shows_them(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake, route={"quorum": 2}) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        await b.person.click(message, "hitl:approve")
        await ephemeral_to(fake, "U0ALICE", "Your vote is counted")
        await wait_for(lambda: "1 of 2 approvals: alice" in json.dumps(
            fake.messages[(CHANNEL, message["ts"])]["blocks"]), 5)
        await b.person.click(message, "hitl:approve")  # the same person again: still one vote
        await wait_for(lambda: sum("vote is counted" in str(e["text"]) for e in fake.ephemerals) == 2, 5)
        assert (await b.stored(rid)).is_open
        await b.person.as_user("U0BOB").click(message, "hitl:approve")
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.responder.user_id == "U0BOB"
        await wait_for(lambda: "Approved by <@U0BOB>" in json.dumps(
            fake.messages[(CHANNEL, message["ts"])]["blocks"]), 5)


async def test_slow_answer_is_acked_within_budget_and_still_stored(tmp_path: Path, fake: FakeSlack) -> None:
    # the responders check needs Slack (usergroup expansion) and Slack is slow right now
    fake.delays["usergroups.users.list"] = 0.8
    route = {"responders": ["slack:@oncall-group"]}
    async with slack_bridge(tmp_path, fake, route=route, slack={"ack_budget_s": 0.2}) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        response = await b.person.click(message, "hitl:approve")
        assert response.status_code == 200
        assert (await b.stored(rid)).is_open  # acked before the answer was through
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.responder.user_id == "U0ALICE"


async def test_modal_submitted_by_someone_not_allowed_is_refused_inline(
    tmp_path: Path, fake: FakeSlack
) -> None:
    async with slack_bridge(tmp_path, fake, route={"responders": ["slack:U0BOB"]}) as b:
        rid = await b.create({"title": "Token", "questions": [
            {"id": "token", "kind": "secret", "prompt": "Token?"}]})
        message = await b.message_of(rid)
        bob = b.person.as_user("U0BOB")
        await bob.click(message, "hitl:open")
        view = await b.latest_view(1)
        response = await b.person.as_user("U0MALLORY").submit(view, {"q:token": "stolen-token-123"})
        assert response.json()["errors"]["q:token"] == "You are not allowed to answer this request."
        assert (await b.stored(rid)).is_open
        events = await b.daemon.store.list_events(rid)
        refused = [e for e in events if e.kind == "refused"]
        assert refused and refused[0].actor == "slack:U0MALLORY"
        assert "stolen-token-123" not in str([e.data for e in events])


async def test_expired_trigger_tells_the_person_to_click_again(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        payload = b.person.block_actions(message, "hitl:reject")
        fake.age_trigger(payload["trigger_id"], 3.5)  # Slack delivered the click late
        assert (await b.person.send(payload)).status_code == 200
        await ephemeral_to(fake, "U0ALICE", "Please click again")
        assert fake.calls_of("views.open")[0].response["error"] == "expired_trigger_id"
        await b.person.click(message, "hitl:reject")  # a fresh click works
        view = await b.latest_view(1)
        await b.person.submit(view, {})
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.values == {"ok": "no"}
        assert request.answer.reason is None
