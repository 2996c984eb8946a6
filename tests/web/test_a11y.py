"""WCAG 2.1 AA, checked by axe-core in Chromium: every page of the inbox (each list tab, a
search, each kind of question open and closed, the check step, login, a message page, the
emailed answer page open and closed), in light and dark mode, on a phone and a desktop, has
no serious or critical violation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from adapters.web.listing import TABS
from tests.engines.mastra_server import NodeMissing
from tests.harness import callback_receiver, running_bridge
from tests.web import axe
from tests.web.browser import Browser, Page, chromium, needs_chromium
from tests.web.scene import ANA_TOKEN, CONFIG, Scene, build

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.asyncio(loop_scope="module")]

VIEWPORTS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 860}}


@dataclass
class World:
    browser: Browser
    scene: Scene
    axe: Path


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    try:
        script = axe.install()
    except NodeMissing as exc:
        pytest.skip(f"axe-core cannot be installed here: {exc}")
    async with callback_receiver() as receiver, \
            running_bridge(tmp_path_factory.mktemp("a11y"), CONFIG) as daemon, chromium() as browser:
        receiver.status = 410  # the engine says "gone": that delivery gives up
        yield World(browser, await build(daemon, receiver.url), script)


def pages(scene: Scene) -> dict[str, str]:
    ids = scene.ids
    shown = {f"list {tab}": f"/inbox?view={tab}" for tab in TABS}
    shown["search with no result"] = "/inbox?q=no-such-thing"
    shown.update({f"request {name}": f"/inbox/r/{rid}" for name, rid in ids.items()})
    shown["not found"] = "/inbox/r/no-such-request"
    shown["insights"] = "/inbox/insights"
    shown["email link, open"] = scene.link
    shown["email link, closed"] = scene.closed_link
    shown["standing approvals"] = "/inbox/grants"
    return shown


async def _check(page: Page, script: Path, problems: dict[str, Any], name: str) -> None:
    await page.wait_for_selector("html[data-js=ready]", state="attached")
    found = await axe.violations(page, script)
    if found:
        problems[name] = found


async def _one_setting(world: World, viewport: str, scheme: str) -> dict[str, Any]:
    """Every page in one viewport and colour scheme; the violations found, by page."""
    base = world.scene.base
    problems: dict[str, Any] = {}
    phone = viewport == "phone"
    context = await world.browser.new_context(viewport=VIEWPORTS[viewport], color_scheme=scheme,  # type: ignore[arg-type]
                                              bypass_csp=True, is_mobile=phone, has_touch=phone)
    await context.add_init_script(path=str(world.axe))  # present in every page, before its own scripts
    try:
        page = await context.new_page()
        page.set_default_timeout(20_000)
        await page.goto(f"{base}/inbox/login")
        await _check(page, world.axe, problems, "login")
        await page.fill("#login-secret", "wrong-token-value")
        await page.get_by_role("button", name="Log in").click()
        await page.get_by_text("wrong password or token").wait_for()
        await _check(page, world.axe, problems, "login refused")
        await page.fill("#login-secret", ANA_TOKEN)
        await page.get_by_role("button", name="Log in").click()
        await page.wait_for_url("**/inbox")
        for name, path in pages(world.scene).items():
            await page.goto(base + path)
            await _check(page, world.axe, problems, name)
        # the check step (what pages without JavaScript show before a one-tap answer is sent)
        await page.goto(f"{base}/inbox/r/{world.scene.ids['confirm']}")
        await page.eval_on_selector("button[data-key=r]", "b => b.removeAttribute('data-one-tap')")
        await page.get_by_role("button", name="Reject").click()
        await page.wait_for_url("**/confirm")
        await _check(page, world.axe, problems, "check step")
        # a form sent back with errors
        await page.goto(f"{base}/inbox/r/{world.scene.ids['form']}")
        await page.eval_on_selector("#answer-form", "f => f.noValidate = true")
        await page.get_by_role("button", name="Send answer").click()
        await page.get_by_text("Some answers need fixing").wait_for()
        await _check(page, world.axe, problems, "form with errors")
    finally:
        await context.close()
    return {f"{viewport}, {scheme}, {name}": found for name, found in problems.items()}


async def test_no_serious_violations_on_any_page(world: World) -> None:
    settings = [(viewport, scheme) for viewport in VIEWPORTS for scheme in ("light", "dark")]
    found: dict[str, Any] = {}
    for problems in await asyncio.gather(*(_one_setting(world, v, s) for v, s in settings)):
        found.update(problems)
    assert found == {}, "\n".join(f"{name}: {v}" for name, v in found.items())
