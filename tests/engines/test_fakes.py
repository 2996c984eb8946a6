"""The fake engines themselves behave as PROTOCOLS.md says (so the e2e tests mean something)."""

from __future__ import annotations

import httpx
import pytest

from tests.engines.fake_agentworld import FakeAgentWorld, select_prompt
from tests.engines.fake_teal import FakeTeal, tool_call


async def test_teal_pause_resume_and_500_for_every_error(teal: FakeTeal) -> None:
    teal.next_plan = [[tool_call("A", "one", {})], [tool_call("A", "two", {})]]
    async with httpx.AsyncClient(base_url=teal.service_url) as http:
        r = await http.post(
            teal.service_url, json={"items": [{"content": "go"}]}, headers={"Authorization": "Bearer a"}
        )
        state = r.json()
        assert state["status"] == "Paused"
        rid = state["content"]["request_id"]
        resume = f"/tealagents/v1alpha1/resume/{rid}"
        # wrong owner, bad body, unknown id: all 500 with no detail
        for kwargs in (
            {"json": {"action": "approve"}, "headers": {"Authorization": "Bearer b"}},
            {"content": b"{", "headers": {"Authorization": "Bearer a"}},
            {"json": {}, "headers": {"Authorization": "Bearer a"}},
        ):
            bad = await http.post(resume, **kwargs)
            assert (bad.status_code, bad.json()) == (500, {"detail": "Internal Server Error"})
        unknown = await http.post(
            "/tealagents/v1alpha1/resume/nope", json={"action": "approve"}, headers={"Authorization": "Bearer a"}
        )
        assert unknown.status_code == 500
        # the query string is ignored: the body decides
        again = await http.post(
            resume + "?action=reject", json={"action": "approve"}, headers={"Authorization": "Bearer a"}
        )
        assert again.json()["request_id"] == rid and again.json()["tool_calls"][0]["function_name"] == "two"
        done = await http.post(resume, json={"action": "approve"}, headers={"Authorization": "Bearer a"})
        assert "output" in done.json()
        not_paused = await http.post(resume, json={"action": "approve"}, headers={"Authorization": "Bearer a"})
        assert not_paused.status_code == 500


async def test_fault_modes_and_down(teal: FakeTeal) -> None:
    async with httpx.AsyncClient(base_url=teal.service_url) as http:
        teal.server.set_faults("garbage")
        r = await http.post(teal.service_url, json={"items": []}, headers={"Authorization": "a"})
        assert r.status_code == 200 and r.text.startswith("<html>")
        teal.server.set_faults("error", remaining=1)
        assert (
            await http.post(teal.service_url, json={"items": []}, headers={"Authorization": "a"})
        ).status_code == 500
        assert (
            await http.post(teal.service_url, json={"items": []}, headers={"Authorization": "a"})
        ).status_code == 200
        await teal.server.stop()
        with pytest.raises(httpx.ConnectError):
            await http.post(teal.service_url, json={"items": []}, headers={"Authorization": "a"})
        await teal.server.start()
        assert (
            await http.post(teal.service_url, json={"items": []}, headers={"Authorization": "a"})
        ).status_code == 200


async def test_agentworld_refuses_until_the_chat_is_restored_after_a_restart() -> None:
    fake = FakeAgentWorld()
    await fake.server.start()
    try:
        rid = fake.ask("w", "c1", select_prompt([("a", "Pick", [("1", "One")])]))
        fake.restart("w", restored_after=2)
        async with httpx.AsyncClient(base_url=fake.url) as http:
            async def respond(body: dict[str, object]) -> dict[str, object]:
                reply: dict[str, object] = (await http.post("/api/worlds/w/hitl/respond", json=body)).json()
                return reply

            r = await respond({"requestId": rid, "optionId": "1"})
            assert r["accepted"] is False and "No pending" in str(r["reason"])
            chat = (await http.post("/api/worlds/w/setChat/c1")).json()
            assert chat["success"] and chat["hitlPrompts"][0]["prompt"]["requestId"] == rid
            assert (await respond({"requestId": rid, "optionId": "1"}))["accepted"] is False  # not restored yet
            await http.post("/api/worlds/w/setChat/c1")
            assert (await respond({"requestId": rid, "chatId": "c2", "optionId": "1"}))["reason"] == (
                f"Request '{rid}' belongs to chat 'c1', not 'c2'.")
            assert (await respond({"requestId": rid, "optionId": "9"}))["reason"] == (
                "Invalid option '9' for questionId 'a'.")
            assert (await respond({"requestId": rid, "skipped": True}))["reason"] == (
                f"Request '{rid}' does not allow skipping.")
            assert await respond({"requestId": rid, "chatId": "c1", "optionId": "1"}) == {"accepted": True}
            assert (await http.post("/api/worlds/w/setChat/c1")).json()["hitlPrompts"] == []
            assert (await http.post("/api/worlds/w/tool-results", json={})).status_code == 404
    finally:
        await fake.server.stop()
