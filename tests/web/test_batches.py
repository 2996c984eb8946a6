"""The inbox's batch view and away form in Chromium: twenty alike requests, one left out,
a preview of what will be decided, then a result per item; a delegation set and ended."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.harness import running_bridge
from tests.web.browser import Browser, Page, needs_chromium, new_page
from tests.web.helpers import CONFIRM, Person, create

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.asyncio(loop_scope="module")]
PEOPLE = {"people": {"ana": ["web:local"], "bo": ["slack:U0BO"]}}


async def test_twenty_alike_approved_at_once_but_one_with_a_preview(tmp_path: Path, browser: Browser) -> None:
    async with running_bridge(tmp_path) as bridge, new_page(browser) as page:
        ids = [await create(bridge, {**CONFIRM, "title": f"Delete 'f{n}.txt'", "tool": "fs.delete"})
               for n in range(20)]
        other = await create(bridge, {**CONFIRM, "title": "Restart db", "tool": "ops.restart"})
        await page.goto(f"{bridge.base_url}/inbox/batches")
        assert "20 × fs.delete" in await page.locator("h2").first.inner_text()
        skipped = (await bridge.service.get(ids[4]))
        assert skipped is not None
        await page.get_by_label(skipped.title).uncheck()
        await page.get_by_role("button", name="Approve the selected…").click()
        await page.get_by_role("heading", name="You are about to approve 19 requests").wait_for()
        assert skipped.title in await page.locator(".batch-left-out").inner_text()
        assert [(await bridge.service.get(i)).is_open for i in ids] == [True] * 20  # type: ignore[union-attr]
        await page.get_by_role("button", name="Approve 19").click()
        await page.get_by_role("heading", name="Batch decided").wait_for()
        results = await page.locator(".batch-results li").all_inner_texts()
        assert len(results) == 19 and all("answered" in line for line in results)
        assert "1 left out" in await page.locator("main").inner_text()
        states = [(await bridge.service.get(i)).is_open for i in ids]  # type: ignore[union-attr]
        assert states.count(True) == 1 and states[4]
        assert (await bridge.service.get(other)).is_open  # type: ignore[union-attr]


async def test_away_is_set_refused_and_ended_in_the_inbox(tmp_path: Path, browser: Browser) -> None:
    async with running_bridge(tmp_path, PEOPLE) as bridge, new_page(browser) as page:
        await page.goto(f"{bridge.base_url}/inbox/away")
        await page.get_by_label("Back on").fill("2020-01-01T00:00+00:00")
        await page.get_by_role("button", name="Set my delegation").click()
        assert "has passed" in await page.get_by_role("alert").inner_text()
        until = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0).isoformat()
        await page.get_by_label("Back on").fill(until)
        await page.get_by_role("button", name="Set my delegation").click()
        await page.get_by_role("status").filter(has_text="Your delegation is set").wait_for()
        assert "bo answers for them" in await page.locator("main").inner_text()
        assert [w.delegate for w in await bridge.service.delegations()] == ["bo"]
        await page.get_by_role("button", name="I am back").click()
        await page.get_by_role("status").filter(has_text="Welcome back").wait_for()
        assert await bridge.service.delegations() == []


async def test_hostile_batch_posts_are_refused(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, CONFIRM)
        await person.open(rid)  # for the form's CSRF token
        huge = {"offered": [f"r_{n}" for n in range(201)], "id": [rid], "value": "yes"}
        assert (await person.submit("/inbox/batches/answer", huge)).status_code == 422
        assert (await person.submit("/inbox/batches/answer", {"offered": [rid], "value": "maybe",
                                                              "id": [rid]})).status_code == 422
        assert (await person.submit("/inbox/batches/answer", {"offered": [rid], "value": "yes"})).status_code == 422
        forged = await person.submit("/inbox/batches/answer", {"offered": [rid], "id": [rid], "value": "yes"},
                                     csrf="forged")
        assert forged.status_code == 403
        unknown = await person.submit("/inbox/batches/answer", {"offered": ["r_nosuch"], "id": ["r_nosuch"],
                                                                "value": "yes"})
        assert unknown.status_code == 200 and "no request" in unknown.text
        assert (await bridge.service.get(rid)).is_open  # type: ignore[union-attr]


async def test_the_batch_and_away_pages_have_no_serious_violations(tmp_path: Path, browser: Browser) -> None:
    from tests.engines.mastra_server import NodeMissing
    from tests.web import axe

    try:
        script = axe.install()
    except NodeMissing as exc:
        pytest.skip(f"axe-core cannot be installed here: {exc}")
    found: dict[str, object] = {}
    async with running_bridge(tmp_path, PEOPLE) as bridge:
        for n in range(3):
            await create(bridge, {**CONFIRM, "title": f"Delete 'f{n}.txt'", "tool": "fs.delete"})
        for scheme, viewport in (("light", {"width": 1280, "height": 860}), ("dark", {"width": 390, "height": 844})):
            async with new_page(browser, viewport=viewport, color_scheme=scheme, bypass_csp=True) as page:
                await page.context.add_init_script(path=str(script))

                async def check(name: str, page: Page = page, scheme: str = scheme) -> None:
                    await page.wait_for_selector("html[data-js=ready]", state="attached")
                    problems = await axe.violations(page, script)
                    if problems:
                        found[f"{scheme} {name}"] = problems

                await page.goto(f"{bridge.base_url}/inbox/batches")
                await check("batches")
                await page.get_by_role("button", name="Approve the selected…").click()
                await page.get_by_role("heading", name="You are about to approve").wait_for()
                await check("preview")
                await page.goto(f"{bridge.base_url}/inbox/away")
                await check("away")
    assert found == {}, found
