"""Socket Mode: with `app_token` set the same app runs over a websocket opened with
apps.connections.open (no public URL, nothing mounted at /slack/events)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.slack_api import FakeSlack
from tests.harness import wait_for
from tests.slack.conftest import confirm_body, slack_bridge


async def test_click_and_thread_reply_over_socket_mode(tmp_path: Path, fake: FakeSlack) -> None:
    slack = {"app_token": fake.app_token}
    async with slack_bridge(tmp_path, fake, slack=slack) as b:
        assert fake.calls_of("apps.connections.open", ok=True)
        assert fake.calls_of("apps.connections.open")[0].token == fake.app_token
        assert (await b.http.post(b.person.url, content=b"x")).status_code in (404, 405)
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        ack = await fake.send_socket_envelope("interactive", b.person.block_actions(message, "hitl:approve"))
        assert ack["envelope_id"]
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.values == {"ok": "yes"}

        rid2 = await b.create({"title": "Why?", "questions": [{"id": "why", "kind": "text", "prompt": "Why?"}]})
        message2 = await b.message_of(rid2)
        await fake.send_socket_envelope("events_api", b.person.thread_reply(message2, "flaky test"))
        request2 = await b.closed(rid2)
        assert request2.answer is not None and request2.answer.values == {"why": "flaky test"}
        # a modal over Socket Mode: the errors come back in the ack's payload
        rid3 = await b.create({"title": "Edit", "questions": [
            {"id": "args", "kind": "edit", "prompt": "Args", "default": {"a": 1}}]})
        message3 = await b.message_of(rid3)
        await fake.send_socket_envelope("interactive", b.person.block_actions(message3, "hitl:open"))
        await wait_for(lambda: len(fake.views) == 1, 5)
        view = next(iter(fake.views.values()))
        ack = await fake.send_socket_envelope("interactive", b.person.view_submission(view, {"q:args": "nope"}))
        assert ack["payload"]["response_action"] == "errors"
        assert (await b.stored(rid3)).is_open


async def test_hostile_envelopes_do_not_stop_socket_mode(tmp_path: Path, fake: FakeSlack) -> None:
    async with slack_bridge(tmp_path, fake, slack={"app_token": fake.app_token}) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        for payload in ({"type": "block_actions", "actions": "x", "user": None},
                        {"type": "view_submission", "user": {"id": "U0ALICE"}, "view": 7},
                        {"type": "block_actions", "user": {"id": "U0ALICE"},
                         "actions": [{"action_id": "hitl:approve", "block_id": "hitl:r_nope"}]}):
            ack = await fake.send_socket_envelope("interactive", payload)
            assert ack["envelope_id"]
        assert (await b.stored(rid)).is_open
        await fake.send_socket_envelope("interactive", b.person.block_actions(message, "hitl:approve"))
        request = await b.closed(rid)
        assert request.answer is not None and request.answer.values == {"ok": "yes"}


async def test_a_refused_app_token_leaves_the_rest_running(
    tmp_path: Path, fake: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    async with slack_bridge(tmp_path, fake, slack={"app_token": "xapp-wrong"}) as b:
        await wait_for(lambda: "app token was refused (invalid_auth)" in caplog.text, 5)
        rid = await b.create(confirm_body())
        await b.message_of(rid)  # posting still works
        health = await b.http.get(f"{b.daemon.base_url}/healthz")
        assert health.status_code == 200
        assert len(fake.calls_of("apps.connections.open")) == 1  # reported once, not retried
    assert "xapp-wrong" not in caplog.text
