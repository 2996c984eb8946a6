"""On a phone (390×844, touch): a compact header, the request's state at the top, Approve and
Reject on screen without scrolling with targets of at least 44 px, and one-tap answers held
for a few seconds (undo) before anything is recorded — or sent at once when the page is
left. The emailed answer page works the same way."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bridge.daemon import Daemon
from bridge.models import Request
from tests.web.browser import Browser, Page, needs_chromium, new_page, visible_box
from tests.web.helpers import CONFIRM, FORM, MIXED, create
from tests.web.scene import DESCRIPTION
from tests.web.test_browser import answered

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.asyncio(loop_scope="module")]

PHONE: dict[str, Any] = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
                         "device_scale_factor": 2}
LONG = {**CONFIRM, "description": DESCRIPTION * 3,
        "context": {"ticket": "SUP-1", "notes": "word " * 400, "nested": {"a": {"b": [1, 2, 3]}}}}


async def box(page: Page, selector: str) -> dict[str, float]:
    found = await visible_box(page.locator(selector).first)
    assert found is not None, f"{selector} is not shown"
    return found


async def test_decision_and_actions_are_within_reach(bridge: Daemon, browser: Browser) -> None:
    rid = await create(bridge, {**LONG, "timeout_s": 1800})
    async with new_page(browser, **PHONE) as page:
        await page.goto(f"{bridge.base_url}/inbox/r/{rid}")
        header = await box(page, "header.top")
        assert header["height"] <= 0.07 * 844  # was 17 % of the screen
        strip = await box(page, "#request-top")
        top_text = await page.locator("#request-top").inner_text()
        assert strip["y"] < 0.3 * 844 and re.search(r"due in (29|30) min", top_text), top_text  # 30 min, rounded
        for name in ("Approve", "Reject"):
            button = await visible_box(page.get_by_role("button", name=name))
            assert button is not None
            assert button["y"] >= 0 and button["y"] + button["height"] <= 844, f"{name} is below the fold"
            assert button["height"] >= 44 and button["width"] >= 44
        assert await page.evaluate("document.documentElement.scrollHeight") > 1.5 * 844  # a long page indeed
        await page.mouse.wheel(0, 3000)  # scrolled down, the bar stays
        button = await visible_box(page.get_by_role("button", name="Approve"))
        assert button is not None and button["y"] + button["height"] <= 844
        # the last words of the page are not hidden under the bar
        await page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        last = await box(page, "#request-details")
        bar = await box(page, ".actions.bar")
        assert last["y"] + last["height"] <= bar["y"]


async def test_every_target_is_at_least_44_px(bridge: Daemon, browser: Browser) -> None:
    ids = [await create(bridge, MIXED), await create(bridge, FORM)]
    boxes: list[Any] = []
    async with new_page(browser, **PHONE) as page:
        for rid in ids:
            await page.goto(f"{bridge.base_url}/inbox/r/{rid}")
            measure = ("els => els.filter(e => e.offsetParent !== null).map(e => [e.outerHTML.slice(0, 60), "
                       "e.getBoundingClientRect().height])")
            targets = await page.eval_on_selector_all(
                "#answer-form label.choice, #answer-form input:not([type=hidden]):not([type=radio])"
                ":not([type=checkbox]), #answer-form select, #answer-form textarea, #answer-form button, .crumbs a",
                measure)
            assert targets and all(height >= 44 for _, height in targets), [t for t in targets if t[1] < 44]
            boxes += await page.eval_on_selector_all(
                "#answer-form input[type=radio], #answer-form input[type=checkbox]", measure)
        assert boxes and all(height >= 20 for _, height in boxes), boxes  # inside a 44 px label, and easy to see
        await page.goto(f"{bridge.base_url}/inbox")
        tabs = await page.eval_on_selector_all(".tabs a", "els => els.map(e => e.getBoundingClientRect().height)")
        rows = await page.eval_on_selector_all(".row", "els => els.map(e => e.getBoundingClientRect().height)")
        assert tabs and min(tabs) >= 44 and rows and min(rows) >= 44


async def test_a_one_tap_answer_can_be_undone_before_anything_is_recorded(bridge: Daemon,
                                                                         browser: Browser) -> None:
    rid = await create(bridge, CONFIRM)
    async with new_page(browser, **PHONE) as page:
        await page.clock.install()
        await page.goto(f"{bridge.base_url}/inbox/r/{rid}")
        await page.get_by_role("button", name="Approve").click()
        undo = page.get_by_role("button", name="Undo")
        await undo.wait_for()
        assert "Approving" in await page.locator("#undo-text").inner_text()
        assert await page.locator("#actions").is_hidden()
        await page.clock.run_for(4_000)
        assert (await bridge.service.get(rid)).answer is None  # type: ignore[union-attr]
        await undo.click()
        await page.get_by_role("button", name="Approve").wait_for()
        assert await page.evaluate("document.activeElement.textContent.trim()") == "Approve"
        await page.clock.run_for(20_000)  # long after the window: still nothing
        assert (await bridge.service.get(rid)).answer is None  # type: ignore[union-attr]

        await page.fill("#in-reason", "not during the freeze")
        await page.get_by_role("button", name="Reject").click()
        await page.clock.run_for(5_000)  # the window ends: sent
        await page.get_by_text("Your answer was recorded.").wait_for()
        request = await answered(bridge, rid)
        assert request.answer is not None and request.answer.values == {"ok": "no"}
        assert request.answer.reason == "not during the freeze"
        assert "Rejected by local in the inbox" in await page.locator("#request-top").inner_text()


async def test_leaving_or_hiding_the_page_sends_the_held_answer(bridge: Daemon, browser: Browser) -> None:
    left, hidden = await create(bridge, CONFIRM), await create(bridge, CONFIRM)
    async with new_page(browser, **PHONE) as page:
        await page.goto(f"{bridge.base_url}/inbox/r/{left}")
        await page.get_by_role("button", name="Approve").click()
        await page.get_by_role("button", name="Undo").wait_for()
        await page.goto(f"{bridge.base_url}/inbox")  # left within the window: not lost
        assert (await answered(bridge, left)).answer.values == {"ok": "yes"}  # type: ignore[union-attr]

        await page.goto(f"{bridge.base_url}/inbox/r/{hidden}")
        await page.get_by_role("button", name="Reject").click()
        await page.get_by_role("button", name="Undo").wait_for()
        await page.evaluate("""() => {  // the phone switches to another app
            Object.defineProperty(document, "visibilityState", {value: "hidden", configurable: true});
            document.dispatchEvent(new Event("visibilitychange"));
        }""")
        assert (await answered(bridge, hidden)).answer.values == {"ok": "no"}  # type: ignore[union-attr]
        await page.evaluate("""() => {  // and back: the page shows how it ended
            Object.defineProperty(document, "visibilityState", {value: "visible", configurable: true});
            document.dispatchEvent(new Event("visibilitychange"));
        }""")
        await page.get_by_text("Rejected by local in the inbox").wait_for()


async def test_the_emailed_answer_page_on_a_phone(bridge: Daemon, browser: Browser) -> None:
    from bridge.links import link_for

    rid = await create(bridge, {**LONG, "title": "Approve the invoice run"})
    link = await link_for(bridge.store, rid, "email:boss@example.com", deadline=None)
    url = f"{bridge.base_url}/inbox/a/{link.token}"
    async with new_page(browser, **PHONE) as page:
        await page.goto(url)
        assert await page.locator("header .who").count() == 0  # nobody is logged in here
        assert "Sent to boss@example.com" in await page.locator(".crumbs").inner_text()
        button = await visible_box(page.get_by_role("button", name="Approve"))
        assert button is not None and button["y"] + button["height"] <= 844 and button["height"] >= 44
        await page.get_by_role("button", name="Approve").click()
        await page.get_by_role("button", name="Send now").click()
        await page.get_by_text("Your answer was recorded. Thank you.").wait_for()
        request: Request = await answered(bridge, rid)
        assert request.answer is not None and request.answer.responder.key == "email:boss@example.com"
        assert "Approved by boss@example.com by email" in await page.locator("#request-top").inner_text()

    other = await create(bridge, CONFIRM)
    link = await link_for(bridge.store, other, "email:boss@example.com", deadline=None)
    async with new_page(browser, java_script_enabled=False, **PHONE) as page:
        await page.goto(f"{bridge.base_url}/inbox/a/{link.token}")
        await page.get_by_role("button", name="Reject").click()
        await page.get_by_role("heading", name="Check your answer").wait_for()
        assert (await bridge.service.get(other)).answer is None  # type: ignore[union-attr]
        await page.get_by_role("button", name="Reject").click()
        await page.get_by_text("Your answer was recorded. Thank you.").wait_for()
        assert (await answered(bridge, other)).answer.values == {"ok": "no"}  # type: ignore[union-attr]



async def test_standing_approval_buttons_are_within_reach(bridge: Daemon, browser: Browser) -> None:
    rid = await create(bridge, {**LONG, "tool": "Bash", "session": "s-1", "timeout_s": 1800})
    async with new_page(browser, **PHONE) as page:
        await page.goto(f"{bridge.base_url}/inbox/r/{rid}")
        await page.mouse.wheel(0, 3000)  # scrolled down, the whole bar stays on screen
        for name in ("Allow once", "Reject", "Allow for this session", "Allow for 1 hour", "Always allow this"):
            button = await visible_box(page.get_by_role("button", name=name))
            assert button is not None
            assert button["y"] >= 0 and button["y"] + button["height"] <= 844, f"{name} is below the fold"
            assert button["height"] >= 44 and button["width"] >= 44
        await page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        last = await box(page, "#request-details")
        bar = await box(page, ".actions.bar")
        assert last["y"] + last["height"] <= bar["y"]  # nothing hidden under the taller bar
