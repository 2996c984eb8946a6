"""Headless Chromium (Debian's package) driven by Playwright, for the inbox's browser tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="headless Chromium is not installed: run scripts/install-chromium.sh "
           "(apt-get install chromium) to enable the browser tests",
)

if CHROMIUM.exists():
    from playwright.async_api import Browser, Locator, Page, async_playwright
else:  # pragma: no cover - the tests using it are skipped
    Browser = Locator = Page = object  # type: ignore[assignment,misc]

TIMEOUT_MS = 10_000


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def new_page(browser: Browser, **context_options: object) -> AsyncIterator[Page]:
    """A page in a fresh context (own cookies), closed afterwards."""
    context = await browser.new_context(**context_options)  # type: ignore[arg-type]
    try:
        page = await context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        yield page
    finally:
        await context.close()


async def visible_box(locator: Locator) -> dict[str, float] | None:
    """`locator`'s box once it is shown (bounding_box() does not wait: it is None for an
    element the page's script has not shown yet)."""
    await locator.wait_for(state="visible")
    box: dict[str, float] | None = await locator.bounding_box()
    return box
