"""Times in the web inbox read like everywhere else (24-hour, with the zone), whatever the
browser's locale: an en-US browser shows "21:26 UTC", not "09:26 PM"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness import running_bridge
from tests.web.browser import Browser, needs_chromium, new_page
from tests.web.helpers import CONFIRM, create

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.asyncio(loop_scope="module")]


async def test_clocks_are_24_hour_with_the_zone_in_an_en_us_browser(tmp_path: Path, browser: Browser) -> None:
    async with running_bridge(tmp_path) as bridge, new_page(browser, locale="en-US", timezone_id="UTC") as page:
        rid = await create(bridge, {**CONFIRM, "timeout_s": 13 * 3600})
        await page.goto(f"{bridge.base_url}/inbox/r/{rid}")
        shown = page.locator("time[data-clock]").first
        await shown.wait_for()
        text = (await shown.text_content() or "").strip()
        assert re.fullmatch(r"(\d{1,2} \w{3} |\w{3} \d{1,2} )?\d{2}:\d{2} UTC", text), text
        assert not re.search(r"AM|PM", text)
