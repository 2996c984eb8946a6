"""The email answer page in headless Chromium on a phone-sized screen: follow the mail's
link, approve with one thumb, see it recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.email.smtp_server import smtp_server
from tests.email.test_email import BOSS, create, escalated_mail, ladder, link_in
from tests.harness import wait_for
from tests.web.browser import chromium, needs_chromium, new_page, visible_box

pytestmark = [pytest.mark.browser, needs_chromium]
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


async def test_the_answer_page_on_a_phone(tmp_path: Path) -> None:
    with smtp_server(tmp_path) as smtp:
        async with ladder(tmp_path, smtp) as (daemon, clock), chromium() as browser, \
                new_page(browser, **PHONE) as page:
            rid = await create(daemon)
            link = link_in(await escalated_mail(daemon, clock, smtp))
            await page.goto(link)
            await page.get_by_role("heading", name="Deploy api v2 to prod").wait_for()
            assert await page.get_by_text(f"Sent to {BOSS}").is_visible()
            approve = page.get_by_role("button", name="Approve")
            box = await visible_box(approve)
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390  # no sideways scrolling
            assert await page.evaluate("document.documentElement.scrollWidth") <= 390
            await approve.tap()
            await page.get_by_text("Your answer was recorded").wait_for()

            async def answered() -> bool:
                request = await daemon.store.get_request(rid)
                return request is not None and request.answer is not None

            await wait_for(answered, 10)
            request = await daemon.store.get_request(rid)
            assert request is not None and request.answer is not None
            assert request.answer.values == {"ok": "yes"} and request.answer.responder.key == f"email:{BOSS}"
