"""docs/guides/claude-code-phone.md's setup: Claude Code's permission prompts (`hitl-bridge mcp`, stdio) answered from
Telegram — one tap allows, Reject plus a reply denies with the reason."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.fakes.telegram_api import FakeTelegram
from tests.harness import running_bridge
from tests.mcp.conftest import mcp_config, next_request, over_stdio, text
from tests.telegram import conftest as telegram_fixtures
from tests.telegram.helpers import last_text_to, posted_message, telegram_config

fake = telegram_fixtures.fake  # the fake Bot API on 127.0.0.1, as in tests/telegram


async def test_claude_codes_permission_prompts_from_telegram(tmp_path: Path, fake: FakeTelegram) -> None:
    me = fake.person(42, "Ann")
    telegram = telegram_config(fake, notify=["telegram:42"], responders=["telegram:42"])
    telegram["routes"][0]["match"] = {"labels.mcp_client": "claude-code"}
    config = mcp_config(telegram)
    # Claude Code introduces itself as "claude-code": the route above matches that label
    async with running_bridge(tmp_path, config) as bridge, over_stdio(bridge, name="claude-code") as client:
        prompting = asyncio.create_task(client.call_tool("permission_prompt", {
            "tool_name": "Bash", "input": {"command": "npm run migrate", "description": "Run migrations"},
            "tool_use_id": "toolu_7"}))
        request = await next_request(bridge)
        message = await posted_message(fake, 42, "Allow Bash: npm run migrate")
        texts = [b["text"] for b in me.buttons(message)]
        assert texts[:2] == ["✅ Allow once", "❌ Reject"]  # one tap; then the standing approvals offered
        assert any("Allow for this session" in t for t in texts[2:]) and any("Always allow this" in t for t in texts)
        await me.press(message, "Allow once")
        verdict = json.loads(text(await prompting))
        assert verdict == {"behavior": "allow",
                           "updatedInput": {"command": "npm run migrate", "description": "Run migrations"}}
        assert request["route"] == "routes[0]"

        prompting = asyncio.create_task(client.call_tool("permission_prompt", {
            "tool_name": "Bash", "input": {"command": "git push origin main"}}))
        await next_request(bridge)
        message = await posted_message(fake, 42, "Allow Bash: git push origin main")
        await me.press(message, "Reject")
        await me.reply(await last_text_to(fake, 42, "why reject"), "open a PR instead")
        verdict = json.loads(text(await prompting))
        assert verdict == {"behavior": "deny", "message": "Rejected by Ann (through telegram): open a PR instead"}
