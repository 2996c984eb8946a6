"""On a desktop (1280 wide): the list and the request side by side, the whole inbox usable
from the keyboard alone (skip link, j/k, a/r with undo on Esc, / to search, ? for the list of
shortcuts), and the system's dark mode followed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from bridge.daemon import Daemon
from tests.harness import running_bridge, wait_for
from tests.web.browser import Browser, Page, needs_chromium, new_page, visible_box
from tests.web.helpers import CHOICE, CONFIRM, TEXT, create
from tests.web.test_browser import answered

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.asyncio(loop_scope="module")]

DESKTOP: dict[str, Any] = {"viewport": {"width": 1280, "height": 860}}


async def focused(page: Page) -> str:
    text: str = await page.evaluate(
        "(document.activeElement.id ? '#' + document.activeElement.id + ' ' : '') + "
        "(document.activeElement.textContent || '').trim()")
    return text


async def test_list_and_request_side_by_side(bridge: Daemon, browser: Browser) -> None:
    rid = await create(bridge, CONFIRM)
    async with new_page(browser, **DESKTOP) as page:
        await page.goto(f"{bridge.base_url}/inbox/r/{rid}")
        listed = await visible_box(page.locator(".pane-list"))
        shown = await visible_box(page.locator("article.pane-detail"))
        assert listed is not None and shown is not None
        assert listed["x"] + listed["width"] <= shown["x"]  # beside, not above
        assert abs(listed["y"] - shown["y"]) < 50 and shown["width"] > listed["width"]
        assert await page.locator(f"#link-{rid}").get_attribute("aria-current") == "true"
        # the deadline and quorum are above the buttons, not below them
        approve_button = page.get_by_role("button", name="Approve")
        top = await visible_box(page.locator("#request-top"))
        approve = await visible_box(approve_button)
        assert top is not None and approve is not None and top["y"] < approve["y"]
    async with new_page(browser, viewport={"width": 390, "height": 844}) as page:
        await page.goto(f"{bridge.base_url}/inbox/r/{rid}")
        assert await page.locator(".pane-list").is_hidden()  # a phone shows one thing at a time


async def test_the_inbox_from_the_keyboard_alone(bridge: Daemon, browser: Browser) -> None:
    first = await create(bridge, {**TEXT, "title": "Keyboard: third"})
    second = await create(bridge, {**CHOICE, "title": "Keyboard: second"})
    third = await create(bridge, {**CONFIRM, "title": "Keyboard: first, deploy"})
    async with new_page(browser, **DESKTOP) as page:
        await page.goto(f"{bridge.base_url}/inbox?q=Keyboard")
        await page.wait_for_selector("html[data-js=ready]", state="attached")
        await page.keyboard.press("Tab")
        assert await focused(page) == "Skip to content"
        await page.keyboard.press("Enter")
        assert await page.evaluate("document.activeElement.id") == "main"
        for key, expected in (("j", third), ("j", second), ("j", first), ("j", first), ("k", second)):
            await page.keyboard.press(key)
            assert await page.evaluate("document.activeElement.id") == f"link-{expected}", key
        await page.keyboard.press("k")
        await page.keyboard.press("Enter")
        await page.wait_for_url(f"**/inbox/r/{third}?q=Keyboard")
        await page.wait_for_selector("html[data-js=ready]", state="attached")
        await page.keyboard.press("j")  # beside the list: j and k open the next and previous request
        await page.wait_for_url(f"**/inbox/r/{second}?q=Keyboard")
        await page.wait_for_selector("html[data-js=ready]", state="attached")
        await page.keyboard.press("k")
        await page.wait_for_url(f"**/inbox/r/{third}?q=Keyboard")
        await page.wait_for_selector("html[data-js=ready]", state="attached")

        await page.keyboard.press("a")  # approve … and take it back with Esc
        await page.get_by_role("button", name="Undo").wait_for()
        assert await focused(page) == "#undo-cancel Undo"
        await page.keyboard.press("Escape")
        await page.get_by_role("button", name="Approve").wait_for()
        assert (await bridge.service.get(third)).answer is None  # type: ignore[union-attr]

        await page.focus("#in-reason")  # the reason comes before the buttons, in reading order
        await page.keyboard.type("not today")
        await page.keyboard.press("Tab")
        assert await focused(page) == "Approve"
        await page.keyboard.press("Tab")
        assert await focused(page) == "Reject"
        await page.evaluate("document.activeElement.blur()")
        await page.keyboard.press("r")
        await page.get_by_role("button", name="Send now").wait_for()
        await page.keyboard.press("Tab")  # from Undo to Send now
        assert await focused(page) == "#undo-now Send now"
        await page.keyboard.press("Enter")
        await page.get_by_text("Your answer was recorded.").wait_for()
        request = await answered(bridge, third)
        assert request.answer is not None and request.answer.values == {"ok": "no"}
        assert request.answer.reason == "not today"

        await page.keyboard.press("/")
        assert await page.evaluate("document.activeElement.id") == "q"
        await page.keyboard.type("second")
        await page.keyboard.press("Enter")
        await page.wait_for_url("**/inbox?view=open&q=second")
        assert await page.locator("#rows-list .row").count() == 1
        assert await page.locator("#count-open").inner_text() == "1"

        await page.keyboard.press("?")
        dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
        await dialog.wait_for()
        assert "approve" in await dialog.inner_text()
        await page.keyboard.press("Escape")
        await dialog.wait_for(state="hidden")
        await page.evaluate("document.activeElement && document.activeElement.blur()")  # not in a field
        await page.keyboard.press("a")  # nothing to approve on a list: said, nothing happens
        await expect(page.locator("#announce")).to_have_text("Nothing to approve here.")  # said a moment later


async def test_typing_in_a_field_is_never_a_shortcut(bridge: Daemon, browser: Browser) -> None:
    rid = await create(bridge, CONFIRM)
    async with new_page(browser, **DESKTOP) as page:
        await page.goto(f"{bridge.base_url}/inbox/r/{rid}")
        await page.focus("#in-reason")
        await page.keyboard.type("a rather jarring reason / ? jk")
        assert await page.input_value("#in-reason") == "a rather jarring reason / ? jk"
        assert await page.locator("#undo").is_hidden() and await page.locator("#shortcuts").is_hidden()
        assert (await bridge.service.get(rid)).answer is None  # type: ignore[union-attr]


async def test_follows_the_systems_dark_mode(bridge: Daemon, browser: Browser) -> None:
    rid = await create(bridge, CONFIRM)
    colours = {}
    for scheme in ("light", "dark"):
        async with new_page(browser, color_scheme=scheme, **DESKTOP) as page:
            await page.goto(f"{bridge.base_url}/inbox/r/{rid}")
            colours[scheme] = await page.evaluate(
                "[getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]")
    assert colours["light"] == ["rgb(244, 246, 249)", "rgb(24, 32, 44)"]
    assert colours["dark"] == ["rgb(14, 19, 26)", "rgb(229, 233, 239)"]


async def test_hostile_markdown_loads_nothing_and_runs_nothing(bridge: Daemon, browser: Browser) -> None:
    hostile = ("![pixel](https://tracker.example/p.gif) <img src=https://tracker.example/q.gif>\n\n"
               "[click](javascript:window.__pwned=1) <script>window.__pwned=2</script>\n\n"
               "<a href=https://evil.example onclick=window.__pwned=3>raw</a> [fine](https://docs.example/x)")
    rid = await create(bridge, {**CONFIRM, "description": hostile, "context": {"note": hostile}})
    async with new_page(browser, **DESKTOP) as page:
        elsewhere: list[str] = []

        async def only_the_daemon(route: Any) -> None:
            if route.request.url.startswith(bridge.base_url):
                await route.continue_()
            else:
                elsewhere.append(route.request.url)
                await route.abort()

        await page.context.route("**/*", only_the_daemon)
        await page.goto(f"{bridge.base_url}/inbox/r/{rid}")
        await page.wait_for_selector("html[data-js=ready]", state="attached")
        description = page.locator(".description")
        assert await description.locator("img").count() == 0
        assert await description.get_by_role("link", name="image: pixel").get_attribute("href") == \
            "https://tracker.example/p.gif"
        assert await description.get_by_role("link", name="fine").get_attribute("rel") == "nofollow noopener noreferrer"
        assert await page.locator("a[href^='javascript'], [onclick]").count() == 0
        assert "<script>window.__pwned=2</script>" in await description.inner_text()  # shown as text
        await page.mouse.click(10, 10)
        assert await page.evaluate("window.__pwned === undefined")
        assert elsewhere == []


async def test_live_views_wait_for_changes_and_a_hidden_tab_lets_go(browser: Browser, tmp_path: Path) -> None:
    """The open page's live views are held by the daemon until something changes (a new
    request shows without a reload), and a tab that is hidden gives its held looks back."""
    async with running_bridge(tmp_path) as daemon:
        feed = daemon.service.changes
        rid = await create(daemon, CONFIRM)
        async with new_page(browser, **DESKTOP) as page:
            await page.goto(f"{daemon.base_url}/inbox/r/{rid}")
            await wait_for(lambda: feed.watching_count() == 2)  # the list's look and the request's
            later = await create(daemon, CHOICE)
            await expect(page.locator(f"#row-{later}")).to_be_visible()
            await wait_for(lambda: feed.watching_count() == 2)  # and held again
            await page.evaluate("""() => {
                Object.defineProperty(document, "hidden", {value: true, configurable: true});
                document.dispatchEvent(new Event("visibilitychange"));
            }""")
            await wait_for(lambda: feed.watching_count() == 0, timeout=3.0)  # before any hold would end
