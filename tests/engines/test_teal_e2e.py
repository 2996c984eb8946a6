"""Teal Agents end to end: the service pauses → bridge request → answer over the HTTP API →
the service resumes with exactly that decision; plus engine failures and hostile intake."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bridge.daemon import Daemon
from tests.engines.conftest import answer, engine_config, get_request, metrics, open_requests, state_of
from tests.engines.fake_teal import FakeTeal, tool_call
from tests.harness import running_bridge, wait_for

OWNER = "Bearer alice-token-0123456789"


def teal_source(fake: FakeTeal, **extra: Any) -> dict[str, Any]:
    return {"type": "teal", "base_url": fake.base_url, "timeout": "1s", **extra}


async def intake(bridge: Daemon, body: Any, token: str | None = None, raw: bytes | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=bridge.base_url) as http:
        if raw is not None:
            return await http.post("/v1/sources/teal/pauses", content=raw,
                                   headers={**headers, "content-type": "application/json"})
        return await http.post("/v1/sources/teal/pauses", json=body, headers=headers)


async def pause_in_bridge(bridge: Daemon, fake: FakeTeal, plan: list[list[dict[str, Any]]]) -> str:
    """A client calls the agent service over HTTP, gets a pause, and hands it to the bridge."""
    fake.next_plan = plan
    async with httpx.AsyncClient() as http:
        r = await http.post(
            fake.service_url, json={"items": [{"content": "release"}]}, headers={"Authorization": OWNER}
        )
    reply = r.json()
    assert reply["status"] == "Paused"
    r = await intake(bridge, {"agent": fake.agent, "version": fake.version, "reply": reply, "authorization": OWNER})
    assert r.status_code == 201, r.text
    request_id: str = r.json()["id"]
    return request_id


async def test_approve_then_follow_up_pause_then_reject(tmp_path: Path, teal: FakeTeal) -> None:
    plan = [[tool_call("Deploy", "ship", {"env": "prod"})], [tool_call("Deploy", "announce", {"channel": "#ops"})]]
    async with running_bridge(tmp_path, engine_config(teal_source(teal))) as bridge:
        first = await pause_in_bridge(bridge, teal, plan)
        view = await get_request(bridge, first)
        assert view["title"] == "Approve Deploy.ship" and "source_ref" not in view
        await answer(bridge, first, {"tool_1": "yes"})
        task = next(iter(teal.tasks.values()))
        await wait_for(lambda: task.decisions == ["approve"])
        (call,) = teal.server.calls_to("POST", "/resume/")
        assert call.path == f"/ReleaseBot/0.1/tealagents/v1alpha1/resume/{task.request_id}"
        assert call.json() == {"action": "approve"} and call.headers["authorization"] == OWNER
        await wait_for(lambda: _is(bridge, first, "delivered"))
        # the follow-up pause (same Teal request_id) is a new request
        follow = await wait_for(lambda: open_requests(bridge, "teal"))
        assert len(follow) == 1 and follow[0].id != first and follow[0].title == "Approve Deploy.announce"
        await answer(bridge, follow[0].id, {"tool_1": "no"})
        await wait_for(lambda: task.decisions == ["approve", "reject"])
        assert task.status == "Canceled"
        await wait_for(lambda: _is(bridge, follow[0].id, "delivered"))


async def _is(bridge: Daemon, request_id: str, state: str) -> bool:
    return await state_of(bridge, request_id) == state


async def test_every_call_must_be_approved(tmp_path: Path, teal: FakeTeal) -> None:
    plan = [[tool_call("A", "one", {}), tool_call("B", "two", {"x": 1})]]
    async with running_bridge(tmp_path, engine_config(teal_source(teal))) as bridge:
        rid = await pause_in_bridge(bridge, teal, plan)
        await answer(bridge, rid, {"tool_1": "yes", "tool_2": "no"})
        task = next(iter(teal.tasks.values()))
        await wait_for(lambda: task.decisions == ["reject"])


async def test_engine_down_then_back_is_retried_and_visible(tmp_path: Path, teal: FakeTeal) -> None:
    async with running_bridge(tmp_path, engine_config(teal_source(teal))) as bridge:
        rid = await pause_in_bridge(bridge, teal, [[tool_call("A", "one", {})]])
        await teal.server.stop()
        await answer(bridge, rid, {"tool_1": "yes"})

        async def failing() -> bool:
            view = await get_request(bridge, rid)
            return bool(view["outbox"]) and view["outbox"][0]["attempts"] >= 2

        await wait_for(failing)
        view = await get_request(bridge, rid)
        assert view["state"] == "answered" and "unreachable" in view["outbox"][0]["last_error"]
        assert 'hitl_outbox_failing{source="teal"} 1.0' in await metrics(bridge)
        await teal.server.start()
        await wait_for(lambda: _is(bridge, rid, "delivered"))
        assert next(iter(teal.tasks.values())).decisions == ["approve"]


async def test_500_and_garbage_replies_are_retried(tmp_path: Path, teal: FakeTeal) -> None:
    async with running_bridge(tmp_path, engine_config(teal_source(teal))) as bridge:
        rid = await pause_in_bridge(bridge, teal, [[tool_call("A", "one", {})]])
        teal.server.set_faults("error", remaining=2, only_methods=("POST",))
        await answer(bridge, rid, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, rid, "delivered"))
        assert len(teal.server.calls_to("POST", "/resume/")) == 3
        rid2 = await pause_in_bridge(bridge, teal, [[tool_call("A", "two", {})]])
        teal.server.set_faults("garbage", remaining=1, only_methods=("POST",))
        await answer(bridge, rid2, {"tool_1": "no"})
        await wait_for(lambda: _is(bridge, rid2, "delivered"))
        assert [t.decisions for t in teal.tasks.values()] == [["approve"], ["reject"]]


async def test_slow_engine_approval_is_never_sent_twice(tmp_path: Path, teal: FakeTeal) -> None:
    """Teal reuses the request id for the next pause: a blind retry could approve unseen calls
    (without `task_url` the bridge cannot check what became of the approval)."""
    source = teal_source(teal, resume_timeout="200ms")
    plan = [[tool_call("A", "one", {})], [tool_call("A", "dangerous", {})]]
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        rid = await pause_in_bridge(bridge, teal, plan)
        teal.server.set_faults("slow", delay=0.6, remaining=1, only_methods=("POST",))
        await answer(bridge, rid, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, rid, "failed"))
        view = await get_request(bridge, rid)
        assert "may have been applied" in view["error"]
        task = next(iter(teal.tasks.values()))
        await wait_for(lambda: task.decisions == ["approve"])
        assert len(teal.server.calls_to("POST", "/resume/")) == 1


async def test_slow_engine_rejection_is_retried_until_it_is_known_to_have_landed(
    tmp_path: Path, teal: FakeTeal
) -> None:
    source = teal_source(teal, resume_timeout="200ms")
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        rid = await pause_in_bridge(bridge, teal, [[tool_call("A", "one", {})]])
        teal.server.set_faults("slow", delay=0.6, remaining=1, only_methods=("POST",))
        await answer(bridge, rid, {"tool_1": "no"})
        await wait_for(lambda: _is(bridge, rid, "delivered"))
        assert next(iter(teal.tasks.values())).decisions == ["reject"]


async def test_wrong_owner_keeps_the_answer_and_retries(tmp_path: Path, teal: FakeTeal) -> None:
    async with running_bridge(tmp_path, engine_config(teal_source(teal))) as bridge:
        reply = teal.start_task(OWNER, plan=[[tool_call("A", "one", {})]])
        body = {"agent": teal.agent, "version": teal.version, "reply": reply, "authorization": "Bearer mallory"}
        rid = (await intake(bridge, body)).json()["id"]
        await answer(bridge, rid, {"tool_1": "yes"})
        await wait_for(lambda: len(teal.server.calls_to("POST", "/resume/")) >= 2)
        view = await get_request(bridge, rid)
        assert view["state"] == "answered" and "HTTP 500" in view["outbox"][0]["last_error"]
        assert next(iter(teal.tasks.values())).decisions == []


async def test_withdraw_cancels_the_open_request(tmp_path: Path, teal: FakeTeal) -> None:
    async with running_bridge(tmp_path, engine_config(teal_source(teal))) as bridge:
        rid = await pause_in_bridge(bridge, teal, [[tool_call("A", "one", {})]])
        task = next(iter(teal.tasks.values()))
        teal.decide_elsewhere(task.request_id, "approve")
        async with httpx.AsyncClient(base_url=bridge.base_url) as http:
            r = await http.post(
                "/v1/sources/teal/pauses/withdraw", json={"task_id": task.task_id, "request_id": task.request_id}
            )
        assert r.json() == {"withdrawn": [rid]}
        assert await state_of(bridge, rid) == "cancelled"
        assert teal.server.calls_to("POST", "/resume/") == []


async def test_same_pause_twice_is_one_request(tmp_path: Path, teal: FakeTeal) -> None:
    async with running_bridge(tmp_path, engine_config(teal_source(teal))) as bridge:
        reply = teal.start_task(OWNER, plan=[[tool_call("A", "one", {})]])
        body = {"agent": teal.agent, "version": teal.version, "reply": reply}
        a, b = await intake(bridge, body), await intake(bridge, body)
        assert (a.status_code, b.status_code) == (201, 200) and a.json()["id"] == b.json()["id"]


async def test_hostile_intake_gets_clear_errors_and_the_daemon_keeps_serving(tmp_path: Path, teal: FakeTeal) -> None:
    token = "t" * 32
    config = engine_config(teal_source(teal), http={"api_tokens": [token], "max_body_bytes": 4096})
    async with running_bridge(tmp_path, config) as bridge:
        good = teal.start_task(OWNER, plan=[[tool_call("A", "one", {})]])
        base = {"agent": teal.agent, "version": teal.version, "reply": good}
        assert (await intake(bridge, base)).status_code == 401
        assert (await intake(bridge, base, token="wrong-token-wrong-token")).status_code == 401
        assert (await intake(bridge, None, token=token, raw=b"{not json")).status_code == 400
        cases = [
            ({**base, "agent": "../admin"}, 422, "agent"),
            ({**base, "version": "0.1/../../x"}, 422, "version"),
            ({**base, "reply": {"status": "Paused", "content": {"tool_calls": []}}}, 422, "reply"),
            ({**base, "reply": {**good["content"], "request_id": "../../etc"}}, 422, "request_id"),
            ({**base, "extra": 1}, 422, "extra"),
        ]
        for body, status, word in cases:
            r = await intake(bridge, body, token=token)
            assert r.status_code == status and word in r.json()["detail"], (body, r.text)
        big = {**base, "title": "x" * 5000}
        assert (await intake(bridge, big, token=token)).status_code == 413
        done = await intake(
            bridge, {**base, "reply": {"status": "Completed", "content": {"output": "hi"}}}, token=token
        )
        assert done.status_code == 200 and done.json()["paused"] is False
        assert (await intake(bridge, base, token=token)).status_code == 201
        assert await open_requests(bridge, "teal")


async def test_caller_authorization_is_not_stored_in_clear(tmp_path: Path, teal: FakeTeal) -> None:
    config = engine_config(teal_source(teal), secrets={"key": "a-passphrase-for-tests"})
    async with running_bridge(tmp_path, config) as bridge:
        rid = await pause_in_bridge(bridge, teal, [[tool_call("A", "one", {})]])
        await answer(bridge, rid, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, rid, "delivered"))
    raw = await asyncio.to_thread(lambda: b"".join(p.read_bytes() for p in tmp_path.glob("bridge.db*")))
    assert b"alice-token" not in raw


async def test_restart_without_secrets_key_falls_back_to_the_configured_authorization(
    tmp_path: Path, teal: FakeTeal
) -> None:
    config = engine_config(teal_source(teal, authorization=OWNER))
    async with running_bridge(tmp_path, config) as bridge:
        reply = teal.start_task(OWNER, plan=[[tool_call("A", "one", {})]])
        body = {"agent": teal.agent, "version": teal.version, "reply": reply, "authorization": "Bearer other"}
        rid = (await intake(bridge, body)).json()["id"]
    async with running_bridge(tmp_path, config) as bridge:  # the in-memory sealing key is gone
        await answer(bridge, rid, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, rid, "delivered"))
        assert teal.server.calls_to("POST", "/resume/")[0].headers["authorization"] == OWNER


def with_task_url(fake: FakeTeal, **extra: Any) -> dict[str, Any]:
    return teal_source(fake, task_url=fake.base_url + "/tasks/{task_id}", **extra)


async def test_slow_resume_is_waited_for_and_the_chained_pause_is_asked(tmp_path: Path, teal: FakeTeal) -> None:
    """Teal answers an approval only after the agent's whole turn: longer than the outbox's
    own `delivery.timeout` (300 ms here, 10 s by default) must not cut it off."""
    teal.resume_delay = 12.0
    plan = [[tool_call("Deploy", "ship", {"env": "prod"})], [tool_call("Deploy", "announce", {"channel": "#ops"})]]
    config = engine_config(teal_source(teal), delivery={"timeout": "300ms"})
    async with running_bridge(tmp_path, config) as bridge:
        first = await pause_in_bridge(bridge, teal, plan)
        await answer(bridge, first, {"tool_1": "yes"})
        await wait_for(lambda: len(teal.server.calls_to("POST", "/resume/")) == 1)
        # while Teal works, the entry stays leased for the source's own limit (resume_timeout 10 min)
        (entry,) = await bridge.store.list_outbox(request_id=first)
        assert entry.due_at > datetime.now(UTC) + timedelta(minutes=9)
        await wait_for(lambda: _is(bridge, first, "delivered"), timeout=40)
        follow = await open_requests(bridge, "teal")
        assert [r.title for r in follow] == ["Approve Deploy.announce"]
        assert len(teal.server.calls_to("POST", "/resume/")) == 1
        kinds = [e.kind for e in await bridge.store.list_events(first)]
        assert "delivery_retry" not in kinds and "delivery_failed" not in kinds


async def test_dropped_resume_is_settled_from_the_task_and_the_chained_pause_is_asked(
    tmp_path: Path, teal: FakeTeal
) -> None:
    teal.resume_delay = 1.0
    teal.drop_resumes = 1
    plan = [[tool_call("Deploy", "ship", {"env": "prod"})], [tool_call("Deploy", "announce", {"channel": "#ops"})]]
    async with running_bridge(tmp_path, engine_config(with_task_url(teal))) as bridge:
        first = await pause_in_bridge(bridge, teal, plan)
        await answer(bridge, first, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, first, "delivered"), timeout=20)
        retries = [e.data["error"] for e in await bridge.store.list_events(first) if e.kind == "delivery_retry"]
        assert retries and "broke off the resume call" in retries[0] and "running the approved turn" in retries[0]
        follow = await wait_for(lambda: open_requests(bridge, "teal"))
        assert [r.title for r in follow] == ["Approve Deploy.announce"]
        task = next(iter(teal.tasks.values()))
        assert task.decisions == ["approve"] and len(teal.server.calls_to("POST", "/resume/")) == 1
        await answer(bridge, follow[0].id, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, follow[0].id, "delivered"), timeout=20)
        assert task.decisions == ["approve", "approve"] and task.items[-1]["role"] == "assistant"


async def test_resume_that_did_not_land_is_sent_again_after_reading_the_task(tmp_path: Path, teal: FakeTeal) -> None:
    """The resume call broke off before Teal read it: the task is still paused on the same
    calls, so the approval is sent again (and only then)."""
    plan = [[tool_call("A", "one", {})], [tool_call("A", "two", {})]]
    async with running_bridge(tmp_path, engine_config(with_task_url(teal))) as bridge:
        rid = await pause_in_bridge(bridge, teal, plan)
        teal.server.set_faults("garbage", remaining=1, only_methods=("POST",))  # never reaches Teal
        await answer(bridge, rid, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, rid, "delivered"))
        task = next(iter(teal.tasks.values()))
        assert task.decisions == ["approve"] and len(teal.server.calls_to("POST", "/resume/")) == 2
        retries = [e.data["error"] for e in await bridge.store.list_events(rid) if e.kind == "delivery_retry"]
        assert len(retries) == 1 and "still paused on these calls" in retries[0]
        assert [r.title for r in await wait_for(lambda: open_requests(bridge, "teal"))] == ["Approve A.two"]


async def test_turn_failing_after_the_approval_ends_with_a_clear_error(tmp_path: Path, teal: FakeTeal) -> None:
    """Teal answers 500 both when it refuses a resume and when the approved turn fails
    afterwards (the task then stays Running for good): the task tells them apart."""
    async with running_bridge(tmp_path, engine_config(with_task_url(teal))) as bridge:
        rid = await pause_in_bridge(bridge, teal, [[tool_call("A", "one", {})]])
        teal.fail_turns = 1
        await answer(bridge, rid, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, rid, "failed"))
        assert "the agent's turn failed" in (await get_request(bridge, rid))["error"]
        assert len(teal.server.calls_to("POST", "/resume/")) == 1
        rid2 = await pause_in_bridge(bridge, teal, [[tool_call("A", "two", {})]])
        teal.server.set_faults("error", remaining=1, only_methods=("POST",))  # refused before Teal took it
        await answer(bridge, rid2, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, rid2, "delivered"))
        retries = [e.data["error"] for e in await bridge.store.list_events(rid2) if e.kind == "delivery_retry"]
        assert len(retries) == 1 and "still paused" in retries[0]


async def test_task_unreadable_or_decided_elsewhere_ends_with_a_clear_error(tmp_path: Path, teal: FakeTeal) -> None:
    async with running_bridge(tmp_path, engine_config(with_task_url(teal))) as bridge:
        rid = await pause_in_bridge(bridge, teal, [[tool_call("A", "one", {})]])
        task = next(iter(teal.tasks.values()))
        teal.decide_elsewhere(task.request_id, "reject")
        await answer(bridge, rid, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, rid, "failed"))
        assert "went on without this approve" in (await get_request(bridge, rid))["error"]
        assert teal.server.calls_to("POST", "/resume/") == []
        rid2 = await pause_in_bridge(bridge, teal, [[tool_call("A", "two", {})]])
        teal.tasks.clear()  # Teal's store lost the task
        await answer(bridge, rid2, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, rid2, "failed"))
        assert "is unknown at task_url" in (await get_request(bridge, rid2))["error"]
        rid3 = await pause_in_bridge(bridge, teal, [[tool_call("A", "three", {})]])
        teal.server.set_faults("garbage", only_methods=("GET",))  # task_url answers something else
        await answer(bridge, rid3, {"tool_1": "yes"})
        await wait_for(lambda: _is(bridge, rid3, "failed"))
        assert "did not answer a Teal task" in (await get_request(bridge, rid3))["error"]
        assert teal.server.calls_to("POST", "/resume/") == []  # never sent blind
