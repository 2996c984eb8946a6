"""Standing approvals in headless Chromium: a person presses "Allow for 1 hour" in the inbox
(the one-tap undo window, then "Send now"); the next matching call is decided by the grant
with nobody asked and reads "Decided automatically"; a call of another tool is asked; the
Standing approvals page lists the grant and its Revoke button ends it, after which the same
call is asked again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness import running_bridge
from tests.web.browser import Browser, needs_chromium, new_page
from tests.web.helpers import create

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.asyncio(loop_scope="module")]


def call(command: str, *, tool: str = "Bash") -> dict[str, Any]:
    return {"title": f"Allow {tool}: {command}", "engine": "claude", "tool": tool, "session": "sess-1",
            "context": {"command": command},
            "questions": [{"id": "approve", "kind": "confirm", "prompt": "Allow?"}]}


async def test_allow_for_one_hour_in_chromium_then_revoke_it(tmp_path: Path, browser: Browser) -> None:
    async with running_bridge(tmp_path) as bridge, new_page(browser) as page:
        base = bridge.base_url
        rid = await create(bridge, call("npm test"))
        await page.goto(f"{base}/inbox/r/{rid}")
        await page.wait_for_selector("html[data-js=ready]")
        await page.get_by_role("button", name="Allow for 1 hour").click()
        await page.get_by_text("Approving — Allow for 1 hour").wait_for()
        assert (await bridge.service.get(rid)).is_open  # type: ignore[union-attr]  # still undoable
        await page.get_by_role("button", name="Send now").click()
        await page.get_by_text("Your answer was recorded.").wait_for()
        await page.get_by_text("Allowed for 1 hour by local").wait_for()
        [grant] = await bridge.service.list_grants()
        assert grant.scope == "span" and grant.pattern == "Bash" and grant.granted_by == "web:local"

        decided = await create(bridge, call("git status"))
        auto = await bridge.service.get(decided)
        assert auto is not None and auto.answer is not None and auto.answer.responder.user_id == grant.id
        await page.goto(f"{base}/inbox/r/{decided}")
        await page.get_by_text("Decided automatically").first.wait_for()
        asked = await create(bridge, call("./src/app.py", tool="Edit"))
        assert (await bridge.service.get(asked)).is_open  # type: ignore[union-attr]

        await page.get_by_role("link", name="Standing approvals").click()
        await page.wait_for_url("**/inbox/grants")
        row = page.locator(f"#grant-{grant.id}")
        await row.get_by_text("Allowed for 1 hour").wait_for()
        await row.get_by_role("button", name="Revoke").click()
        await page.get_by_text("The standing approval was revoked").wait_for()
        await page.get_by_text("No standing approvals.").wait_for()
        assert await bridge.service.list_grants() == []
        again = await create(bridge, call("git status"))
        assert (await bridge.service.get(again)).is_open  # type: ignore[union-attr]
