"""agent-world end to end (against the protocol-true fake, see fake_agentworld.py): an agent
asks in a chat → bridge request → answer over the HTTP API → the engine gets exactly that
option id; tool approvals with option descriptions, replay after a restart, refusals,
failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.agentworld.source import AgentWorldSource
from bridge.daemon import Daemon
from tests.engines.conftest import answer, engine_config, get_request, metrics, open_requests, state_of
from tests.engines.fake_agentworld import NOT_ACTIVATED, NOT_PENDING, FakeAgentWorld, select_prompt
from tests.harness import running_bridge, wait_for

ENV_Q = [("env", "Which environment?", [("stg", "Staging"), ("prd", "Production")])]


def aw_source(fake: FakeAgentWorld, **extra: Any) -> dict[str, Any]:
    return {
        "type": "agentworld",
        "base_url": fake.url + "/api",
        "poll_every": "50ms",
        "timeout": "1s",
        "worlds": [{"world": "ops", "chats": ["c1", "c2"]}],
        **extra,
    }


async def _is(bridge: Daemon, request_id: str, state: str) -> bool:
    return await state_of(bridge, request_id) == state


async def one_open(bridge: Daemon) -> Any:
    async def find() -> Any:
        found = await open_requests(bridge, "agentworld")
        return found[0] if found else None

    return await wait_for(find)


async def test_single_select_answered_with_the_option_id(tmp_path: Path, agentworld: FakeAgentWorld) -> None:
    agentworld.world("ops").chats["c2"] = []
    rid = agentworld.ask("ops", "c1", select_prompt(ENV_Q))
    async with running_bridge(tmp_path, engine_config(aw_source(agentworld))) as bridge:
        req = await one_open(bridge)
        assert req.questions[0].options == ["Staging", "Production"] and req.labels == {"world": "ops", "chat": "c1"}
        await answer(bridge, req.id, {"q1": "Production"})
        sent = {"requestId": rid, "chatId": "c1", "optionId": "prd"}
        await wait_for(lambda: agentworld.world("ops").answers == [sent])
        await wait_for(lambda: _is(bridge, req.id, "delivered"))


async def test_tool_approval_shows_option_descriptions_and_the_command(
    tmp_path: Path, agentworld: FakeAgentWorld
) -> None:
    agentworld.world("ops").chats["c2"] = []
    options = [("yes_once", "Yes once", "Run this command once."),
               ("yes_in_session", "Yes, this session", "Run it now and don't ask again in this chat."),
               ("no", "No", "Do not run it.")]
    prompt = select_prompt([("approval", "Run `rm -rf build` in /srv/app?", options)],
                           metadata={"tool": "shell_cmd", "command": "rm -rf build", "toolCallId": "x"})
    rid = agentworld.ask("ops", "c1", prompt)
    async with running_bridge(tmp_path, engine_config(aw_source(agentworld))) as bridge:
        req = await one_open(bridge)
        (q,) = req.questions
        assert (req.title, req.agent, req.tool) == ("Approval", "planner", "ask_user_input")
        assert q.options == ["Yes once", "Yes, this session", "No"]
        assert q.help_text.splitlines() == ["• Yes once — Run this command once.",
                                            "• Yes, this session — Run it now and don't ask again in this chat.",
                                            "• No — Do not run it."]
        assert req.context["details"] == {"tool": "shell_cmd", "command": "rm -rf build"}
        await answer(bridge, req.id, {"q1": "No"}, reason="not on a Friday")
        await wait_for(lambda: _is(bridge, req.id, "delivered"))
        assert agentworld.world("ops").answers == [{"requestId": rid, "chatId": "c1", "optionId": "no"}]


async def test_multiple_select_and_skip(tmp_path: Path, agentworld: FakeAgentWorld) -> None:
    agentworld.world("ops").chats["c2"] = []
    q = [("checks", "Which checks?", [("lint", "Lint"), ("unit", "Unit tests"), ("e2e", "E2E")])]
    rid = agentworld.ask("ops", "c1", select_prompt(q, multiple=True, allow_skip=True))
    async with running_bridge(tmp_path, engine_config(aw_source(agentworld))) as bridge:
        req = await one_open(bridge)
        assert req.questions[0].kind == "multi_choice" and req.questions[0].options[-1] == "Skip"
        await answer(bridge, req.id, {"q1": ["Lint", "E2E"]})
        expected = {"requestId": rid, "chatId": "c1",
                    "answers": [{"questionId": "checks", "optionIds": ["lint", "e2e"]}]}
        await wait_for(lambda: agentworld.world("ops").answers == [expected])
        rid2 = agentworld.ask("ops", "c1", select_prompt(q, multiple=True, allow_skip=True))
        req2 = await one_open(bridge)
        await answer(bridge, req2.id, {"q1": ["Skip"]})
        await wait_for(lambda: agentworld.world("ops").answers[-1:] == [{"requestId": rid2, "chatId": "c1",
                                                                            "skipped": True}])


async def test_pending_only_in_chat_is_replayed_with_set_chat(tmp_path: Path, agentworld: FakeAgentWorld) -> None:
    agentworld.world("ops").chats["c2"] = []
    rid = agentworld.ask("ops", "c1", select_prompt(ENV_Q))
    async with running_bridge(tmp_path, engine_config(aw_source(agentworld, poll_every="1h"))) as bridge:
        req = await one_open(bridge)
        agentworld.restart("ops")  # the runtime forgets; the chat still holds the prompt
        await answer(bridge, req.id, {"q1": "Staging"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"))
        sent = {"requestId": rid, "chatId": "c1", "optionId": "stg"}
        assert [c.json() for c in agentworld.server.calls_to("POST", "/hitl/respond")] == [sent, sent]
        assert agentworld.world("ops").answers == [sent]


async def test_answer_waits_until_agent_world_has_restored_the_prompt(
    tmp_path: Path, agentworld: FakeAgentWorld
) -> None:
    """Right after a restart agent-world lists the prompt but refuses answers ("No pending
    HITL request found") until the chat's turn is restored: the answer is retried, not lost."""
    agentworld.world("ops").chats["c2"] = []
    rid = agentworld.ask("ops", "c1", select_prompt(ENV_Q))
    async with running_bridge(tmp_path, engine_config(aw_source(agentworld, poll_every="1h"))) as bridge:
        req = await one_open(bridge)
        agentworld.restart("ops", restored_after=4)
        await answer(bridge, req.id, {"q1": "Production"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"), timeout=15)
        assert agentworld.world("ops").answers == [{"requestId": rid, "chatId": "c1", "optionId": "prd"}]
        retries = [e for e in await bridge.store.list_events(req.id) if e.kind == "delivery_retry"]
        assert len(retries) == 3 and all("has not restored it yet" in e.data["error"] for e in retries)


@pytest.mark.parametrize("refusal", [NOT_PENDING, NOT_ACTIVATED])
async def test_every_refusal_after_a_restart_ends_delivered_once_the_chat_is_activated(
    tmp_path: Path, agentworld: FakeAgentWorld, refusal: str
) -> None:
    """After agent-world restarts, an answer naming its chat is refused until the chat is
    activated again, with either of the reasons agent-world gives: both replay setChat."""
    agentworld.world("ops").chats["c2"] = []
    rid = agentworld.ask("ops", "c1", select_prompt(ENV_Q))
    async with running_bridge(tmp_path, engine_config(aw_source(agentworld, poll_every="1h"))) as bridge:
        req = await one_open(bridge)
        agentworld.restart("ops", restored_after=2, refusal=refusal)
        await answer(bridge, req.id, {"q1": "Production"})
        await wait_for(lambda: _is(bridge, req.id, "delivered"), timeout=15)
        sent = {"requestId": rid, "chatId": "c1", "optionId": "prd"}
        assert agentworld.world("ops").answers == [sent]
        replies = [c.json() for c in agentworld.server.calls_to("POST", "/hitl/respond")]
        # refused, refused after the first replay; on the retry: refused, taken after the second replay
        assert replies == [sent] * 4
        retries = [e for e in await bridge.store.list_events(req.id) if e.kind == "delivery_retry"]
        assert len(retries) == 1 and "has not restored it yet" in retries[0].data["error"]


async def test_final_refusal_after_a_restart_fails_with_agent_worlds_reason(
    tmp_path: Path, agentworld: FakeAgentWorld
) -> None:
    agentworld.world("ops").chats["c2"] = []
    agentworld.ask("ops", "c1", select_prompt(ENV_Q))
    async with running_bridge(tmp_path, engine_config(aw_source(agentworld, poll_every="1h"))) as bridge:
        req = await one_open(bridge)
        agentworld.restart("ops", refusal=NOT_ACTIVATED)
        agentworld.world("ops").chats["c1"][0]["questions"][0]["options"] = [{"id": "dev", "label": "Dev"}]
        await answer(bridge, req.id, {"q1": "Staging"})
        await wait_for(lambda: _is(bridge, req.id, "failed"))
        view = await get_request(bridge, req.id)
        assert view["error"] == ("delivery failed: agent-world refused the answer: "
                                 "Invalid option 'stg' for questionId 'env'.")
        assert len(agentworld.server.calls_to("POST", "/hitl/respond")) == 2  # the second after setChat


async def test_refusal_reaches_the_request(tmp_path: Path, agentworld: FakeAgentWorld) -> None:
    agentworld.world("ops").chats["c2"] = []
    agentworld.ask("ops", "c1", select_prompt(ENV_Q))
    async with running_bridge(tmp_path, engine_config(aw_source(agentworld, poll_every="1h"))) as bridge:
        req = await one_open(bridge)
        prompt = agentworld.world("ops").chats["c1"][0]  # the agent re-asked with other options
        prompt["questions"][0]["options"] = [{"id": "dev", "label": "Dev"}]
        await answer(bridge, req.id, {"q1": "Staging"})
        await wait_for(lambda: _is(bridge, req.id, "failed"))
        view = await get_request(bridge, req.id)
        assert view["error"] == ("delivery failed: agent-world refused the answer: "
                                 "Invalid option 'stg' for questionId 'env'.")


async def test_answered_in_agent_world_is_withdrawn(tmp_path: Path, agentworld: FakeAgentWorld) -> None:
    agentworld.world("ops").chats["c2"] = []
    rid = agentworld.ask("ops", "c1", select_prompt(ENV_Q))
    async with running_bridge(tmp_path, engine_config(aw_source(agentworld))) as bridge:
        req = await one_open(bridge)
        agentworld.resolve_elsewhere("ops", rid)
        await wait_for(lambda: _is(bridge, req.id, "cancelled"))


async def test_engine_errors_during_respond_are_retried(tmp_path: Path, agentworld: FakeAgentWorld) -> None:
    agentworld.world("ops").chats["c2"] = []
    rid = agentworld.ask("ops", "c1", select_prompt(ENV_Q))
    async with running_bridge(tmp_path, engine_config(aw_source(agentworld, poll_every="1h"))) as bridge:
        req = await one_open(bridge)
        agentworld.server.set_faults("error", only_methods=("POST",))
        await answer(bridge, req.id, {"q1": "Staging"})

        async def failing() -> bool:
            view = await get_request(bridge, req.id)
            return bool(view["outbox"]) and view["outbox"][0]["attempts"] >= 1

        await wait_for(failing)
        assert 'hitl_outbox_failing{source="agentworld"} 1.0' in await metrics(bridge)
        agentworld.server.set_faults("garbage", remaining=1, only_methods=("POST",))
        await wait_for(lambda: len(agentworld.server.calls_to("POST", "/hitl/respond")) >= 2)
        agentworld.server.set_faults("ok")
        await wait_for(lambda: _is(bridge, req.id, "delivered"), timeout=15)
        assert agentworld.world("ops").answers == [{"requestId": rid, "chatId": "c1", "optionId": "stg"}]


async def test_unknown_chat_and_garbage_prompts_do_not_stop_the_others(
    tmp_path: Path, agentworld: FakeAgentWorld
) -> None:
    agentworld.ask("ops", "c1", {"requestId": "broken", "questions": [{"id": "a", "options": []}]})
    agentworld.ask("ops", "c1", select_prompt(ENV_Q))
    async with running_bridge(tmp_path, engine_config(aw_source(agentworld))) as bridge:  # c2 does not exist
        req = await one_open(bridge)
        assert req.questions[0].prompt == "Which environment?"
        src = bridge.sources[0]
        assert isinstance(src, AgentWorldSource)
        await wait_for(lambda: getattr(src, "polls", 0) >= 3)
        assert len(await open_requests(bridge, "agentworld")) == 1
        assert "does not exist" in src.errors["ops/c2"] and "ops/c1" not in src.errors


async def test_engine_down_then_slow_is_retried_and_answered_once(tmp_path: Path, agentworld: FakeAgentWorld) -> None:
    agentworld.world("ops").chats["c2"] = []
    rid = agentworld.ask("ops", "c1", select_prompt(ENV_Q))
    source = aw_source(agentworld, poll_every="1h", timeout="200ms")
    async with running_bridge(tmp_path, engine_config(source)) as bridge:
        req = await one_open(bridge)
        await agentworld.server.stop()
        await answer(bridge, req.id, {"q1": "Production"})

        async def failing() -> bool:
            view = await get_request(bridge, req.id)
            return bool(view["outbox"]) and "unreachable" in (view["outbox"][0]["last_error"] or "")

        await wait_for(failing)
        assert await state_of(bridge, req.id) == "answered"
        await agentworld.server.start()
        agentworld.server.set_faults("slow", delay=0.6, remaining=1, only_methods=("POST",))
        await wait_for(lambda: _is(bridge, req.id, "delivered"), timeout=15)
        sent = {"requestId": rid, "chatId": "c1", "optionId": "prd"}
        await wait_for(lambda: agentworld.world("ops").answers == [sent])
