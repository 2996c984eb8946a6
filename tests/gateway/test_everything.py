"""The gateway in front of `@modelcontextprotocol/server-everything` (from the npm
registry): its elicitation (form and URL modes) answered by a person in the web inbox when
the agent's client cannot answer it, or by the agent's client when it can; prompts and
resources listed through; the server's progress reaches the agent."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitResult

from tests.gateway.conftest import agent, everything_server, gateway_config, node_servers, posted
from tests.harness import running_bridge
from tests.web.helpers import Person

PASSWORD = "inbox-password-0123456789"
INBOX = {"web": {"password": PASSWORD}}
EVERYTHING_ALLOWED = {"name": "everything", "source": "tools", "labels": {"mcp_server": "everything",
                                                                         "mcp_call": "tools/call"}, "effect": "allow"}


@pytest.fixture(autouse=True)
def _servers() -> None:
    node_servers()


def _texts(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_a_form_elicitation_is_answered_by_a_person_in_the_web_inbox(tmp_path: Path) -> None:
    config = gateway_config(everything_server(), extra={"policies": [EVERYTHING_ALLOWED], **INBOX})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client, \
            Person(bridge.base_url) as person:
        assert (await person.login(PASSWORD, name="Dana")).status_code == 303
        calling = asyncio.create_task(client.call_tool("trigger-elicitation-request", {}))
        [request] = await posted(bridge)
        assert request["labels"]["mcp_call"] == "elicitation/create" and request["title"].startswith("everything asks")
        by_id = {q["id"]: q for q in request["questions"]}
        assert by_id["respond"]["kind"] == "confirm" and by_id["check"]["kind"] == "confirm"
        assert by_id["untitledSingleSelectEnum"]["kind"] == "choice"
        assert "Superman" in by_id["titledSingleSelectEnum"]["options"]  # titles shown, values sent
        assert by_id["untitledMultipleSelectEnum"]["kind"] == "multi_choice"
        page = await person.open(request["id"])
        assert "Your full, legal name" in page.text
        response = await person.answer(request["id"], {
            "q.respond": "yes", "q.name": "Ada Lovelace", "q.check": "yes", "q.integer": "7",
            "q.titledSingleSelectEnum": "Wonder Woman", "q.untitledMultipleSelectEnum": ["Piano", "Drums"]})
        assert response.status_code == 303, response.text
        result = await calling
        said = _texts(result)
        assert '"action": "accept"' in said and "Ada Lovelace" in said
        assert '"integer": 7' in said and '"check": true' in said and '"hero-3"' in said
        assert '"Piano"' in said and '"Drums"' in said


async def test_a_person_declining_in_the_inbox_is_a_decline(tmp_path: Path) -> None:
    config = gateway_config(everything_server(), extra={"policies": [EVERYTHING_ALLOWED], **INBOX})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client, \
            Person(bridge.base_url) as person:
        assert (await person.login(PASSWORD, name="Dana")).status_code == 303
        calling = asyncio.create_task(client.call_tool("trigger-elicitation-request", {}))
        [request] = await posted(bridge)
        assert (await person.answer(request["id"], {"q.respond": "no"})).status_code == 303
        assert '"action": "decline"' in _texts(await calling)


async def test_a_url_elicitation_is_a_link_the_person_opens(tmp_path: Path) -> None:
    config = gateway_config(everything_server(), extra={"policies": [EVERYTHING_ALLOWED], **INBOX})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client, \
            Person(bridge.base_url) as person:
        assert (await person.login(PASSWORD, name="Dana")).status_code == 303
        calling = asyncio.create_task(client.call_tool("trigger-url-elicitation",
                                                       {"url": "https://example.com/consent"}))
        [request] = await posted(bridge)
        assert request["context"] == {"url": "https://example.com/consent"}
        page = await person.open(request["id"])
        assert "https://example.com/consent" in page.text
        assert (await person.answer(request["id"], {"q.respond": "yes"})).status_code == 303
        assert "accept" in _texts(await calling)


async def test_a_client_that_declares_elicitation_answers_it_itself(tmp_path: Path) -> None:
    asked: list[ElicitRequestParams] = []

    async def elicit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"name": "From the client"})

    config = gateway_config(everything_server(), extra={"policies": [EVERYTHING_ALLOWED]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge, elicitation=elicit, mode="legacy") as client:
        result = await client.call_tool("trigger-elicitation-request", {})
        assert len(asked) == 1 and "From the client" in _texts(result), _texts(result)
        assert await bridge.store.list_requests() and all(
            r.labels.get("mcp_call") != "elicitation/create" for r in await bridge.store.list_requests())


async def test_a_server_set_to_bridge_elicitation_asks_people_even_when_the_client_could(tmp_path: Path) -> None:
    async def elicit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        raise AssertionError("the client must not be asked")

    config = gateway_config(everything_server(elicitation="bridge"),
                            extra={"policies": [EVERYTHING_ALLOWED], **INBOX})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge, elicitation=elicit, mode="legacy") as client, \
            Person(bridge.base_url) as person:
        assert (await person.login(PASSWORD, name="Dana")).status_code == 303
        calling = asyncio.create_task(client.call_tool("trigger-elicitation-request", {}))
        [request] = await posted(bridge)
        await person.answer(request["id"], {"q.respond": "yes", "q.name": "Grace"})
        assert "Grace" in _texts(await calling)


async def test_prompts_resources_and_progress_pass_through(tmp_path: Path) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    config = gateway_config(everything_server(prefix=True), extra={"policies": [EVERYTHING_ALLOWED]})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        assert "everything__echo" in tools and "echo" not in tools
        prompts = [p.name for p in (await client.list_prompts()).prompts]
        assert prompts and all(p.startswith("everything__") for p in prompts)
        prompt = await client.get_prompt(prompts[0], {})
        assert prompt.messages
        resources = (await client.list_resources()).resources
        assert resources
        read = await client.read_resource(str(resources[0].uri))
        assert read.contents
        echoed = await client.call_tool("everything__echo", {"message": "hi"})
        assert "hi" in _texts(echoed)
        done = await client.call_tool("everything__trigger-long-running-operation", {"duration": 1, "steps": 3},
                                      progress_callback=on_progress)
        assert not done.is_error and len(seen) >= 2
