"""server-everything's elicitation answered by a person in the web inbox, in headless
Chromium: the agent's call waits in the gateway while the person logs in, fills the
server's form and sends it; the server receives the values as MCP defines them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.gateway.conftest import agent, everything_server, gateway_config, node_servers, posted
from tests.harness import running_bridge
from tests.web.browser import Browser, chromium, needs_chromium, new_page

pytestmark = [pytest.mark.browser, needs_chromium]

PASSWORD = "inbox-password-0123456789"
EVERYTHING_ALLOWED = {"name": "everything", "source": "tools",
                      "labels": {"mcp_server": "everything", "mcp_call": "tools/call"}, "effect": "allow"}


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as shared:
        yield shared


async def test_a_person_fills_the_servers_form_in_the_inbox(tmp_path: Path, browser: Browser) -> None:
    node_servers()
    config = gateway_config(everything_server(), extra={"policies": [EVERYTHING_ALLOWED],
                                                        "web": {"password": PASSWORD}})
    async with running_bridge(tmp_path, config) as bridge, agent(bridge) as client, new_page(browser) as page:
        calling = asyncio.create_task(client.call_tool("trigger-elicitation-request", {}))
        [request] = await posted(bridge)
        await page.goto(f"{bridge.base_url}/inbox/r/{request['id']}")
        await page.wait_for_url("**/inbox/login?next=*")
        await page.fill("#login-name", "Dana")
        await page.fill("#login-secret", PASSWORD)
        await page.get_by_role("button", name="Log in").click()
        await page.wait_for_url(f"**/inbox/r/{request['id']}")
        await page.get_by_text("Your full, legal name").wait_for()
        await page.locator("fieldset[data-question='respond']").get_by_label("Approve").check()
        await page.fill("[name='q.name']", "Ada Lovelace")
        await page.locator("fieldset[data-question='check']").get_by_label("Approve").check()
        await page.locator("fieldset[data-question='titledSingleSelectEnum']").get_by_label("Wonder Woman").check()
        await page.get_by_role("button", name="Send answer").click()
        await page.get_by_text("Your answer was recorded.").wait_for()
        result = await asyncio.wait_for(calling, 30)
        said = "\n".join(b.text for b in result.content if b.type == "text")
        assert '"action": "accept"' in said and "Ada Lovelace" in said and '"hero-3"' in said
        stored = await bridge.store.get_request(request["id"])
        assert stored is not None and stored.answer is not None and stored.answer.via == "web"
