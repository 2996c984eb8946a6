"""A rejection's reason reaches the agent: typed in the web inbox ("sent with your answer"),
it is written after the answer in `response.txt`, on a line the source's `reason_line`
shapes (or leaves out). A secret answer never gets one."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from bridge.daemon import Daemon
from bridge.errors import ConfigError
from tests.delta.bridgekit import delta_bridge, wait_request, wait_state
from tests.delta.helpers import make_v1_10_workspace
from tests.harness import make_settings
from tests.web.helpers import Person

RUN = "20261122_012445_4242f7"


def ask(workspace: Path, request_id: str, input_type: str) -> Path:
    mailbox = make_v1_10_workspace(workspace)
    (mailbox / "request.json").write_text(json.dumps(
        {"request_id": request_id, "prompt": "Deploy to prod?", "input_type": input_type}))
    return mailbox / "response.txt"


async def answer_in_inbox(daemon: Daemon, external_id: str, value: str, reason: str) -> None:
    request = await wait_request(daemon, lambda r: r.external_id == external_id)
    async with Person(daemon.base_url) as person:
        sent = await person.answer(request.id, {f"q.{request.questions[0].id}": value, "reason": reason})
    assert sent.status_code == 303, sent.text
    await wait_state(daemon, request.id, "delivered")


async def test_the_reason_typed_in_the_inbox_follows_the_answer_in_response_txt(tmp_path: Path) -> None:
    rejected = ask(tmp_path / "agents" / "no", "req-no", "confirmation")
    approved = ask(tmp_path / "agents" / "yes", "req-yes", "confirmation")
    text = ask(tmp_path / "agents" / "text", "req-text", "text")
    async with delta_bridge(tmp_path, [str(tmp_path / "agents" / "*")]) as daemon:
        await answer_in_inbox(daemon, "req-no", "no", "never on a Friday\nask again Monday")
        await answer_in_inbox(daemon, "req-yes", "yes", "  watch the error rate  ")
        request = await wait_request(daemon, lambda r: r.external_id == "req-text")
        async with Person(daemon.base_url) as person:  # a text answer is the answer, verbatim
            await person.answer(request.id, {"q.answer": "staging", "reason": "ignored"})
        await wait_state(daemon, request.id, "delivered")
    assert rejected.read_text() == "no\nReason: never on a Friday\nask again Monday"
    assert approved.read_text() == "yes\nReason: watch the error rate"
    assert text.read_text() == "staging"


@pytest.mark.parametrize(("reason_line", "expected"), [
    ("The reviewer said: {reason}", "no\nThe reviewer said: too risky"),
    (None, "no"),
    ("", "no"),
])
async def test_reason_line_is_set_per_source(tmp_path: Path, reason_line: str | None, expected: str) -> None:
    response = ask(tmp_path / "ws", "req-1", "confirmation")
    async with delta_bridge(tmp_path, [str(tmp_path / "ws")], reason_line=reason_line) as daemon:
        await answer_in_inbox(daemon, "req-1", "no", "too risky")
    assert response.read_text() == expected


async def test_a_secret_answer_never_carries_a_reason(tmp_path: Path) -> None:
    response = ask(tmp_path / "ws", "req-secret", "password")
    async with delta_bridge(tmp_path, [str(tmp_path / "ws")]) as daemon:
        request = await wait_request(daemon, lambda r: r.external_id == "req-secret")
        async with httpx.AsyncClient(base_url=daemon.base_url) as client:  # the API takes a reason with any answer
            sent = await client.post(f"/v1/requests/{request.id}/answer",
                                     json={"value": "hunter2", "reason": "rotated today", "responder": "ana"})
        assert sent.status_code == 200, sent.text
        await wait_state(daemon, request.id, "delivered")
    assert response.read_text() == "hunter2"


@pytest.mark.parametrize(("line", "reason"), [
    ("Reason:", "must contain {reason}"),
    ("Reason: {reason}\nMore", "one line"),
])
async def test_a_reason_line_without_its_place_is_refused_at_start(tmp_path: Path, line: str, reason: str) -> None:
    daemon = Daemon(make_settings(tmp_path, {"sources": [{"type": "delta", "reason_line": line}]}))
    with pytest.raises(ConfigError) as err:
        await daemon.start()
    await daemon.store.close()
    assert err.value.key == "sources[0].reason_line" and reason in err.value.reason
