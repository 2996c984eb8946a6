"""End to end in headless Chromium: open the inbox, answer each kind of question, log in,
and watch live updates arrive without reloading."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from bridge.daemon import Daemon
from bridge.models import Request
from tests.harness import running_bridge, wait_for
from tests.web.browser import Browser, needs_chromium, new_page
from tests.web.helpers import CHOICE, CONFIRM, EDIT, FORM, MULTI, SECRET, TEXT, create

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.asyncio(loop_scope="module")]


async def answered(bridge: Daemon, rid: str) -> Request:
    async def closed() -> Request | None:
        request = await bridge.service.get(rid)
        return request if request is not None and request.answer is not None else None

    result: Request = await wait_for(closed, 10)
    return result


async def test_answer_every_kind_in_the_browser(tmp_path: Path, browser: Browser) -> None:
    async with running_bridge(tmp_path) as bridge, new_page(browser) as page:
        ids = {body["title"]: await create(bridge, body) for body in (CONFIRM, CHOICE, MULTI, TEXT, SECRET, FORM,
                                                                        EDIT)}
        base = bridge.base_url
        await page.goto(f"{base}/inbox")
        for title in ids:
            await page.get_by_role("link", name=title).wait_for()

        async def open_request(title: str) -> None:
            await page.goto(f"{base}/inbox")
            await page.get_by_role("link", name=title).click()
            await page.wait_for_url(f"**/inbox/r/{ids[title]}")

        async def done() -> None:
            await page.get_by_text("Your answer was recorded.").wait_for()

        await open_request(CONFIRM["title"])
        await page.fill("#in-reason", "change freeze until Monday")
        await page.get_by_role("button", name="Reject").click()
        await page.get_by_role("button", name="Send now").click()  # rather than waiting out the undo window
        await done()
        await page.get_by_text("Rejected by local in the inbox").wait_for()
        confirm = await answered(bridge, ids[CONFIRM["title"]])
        assert confirm.answer is not None and confirm.answer.values == {"ok": "no"}
        assert confirm.answer.reason == "change freeze until Monday"

        await open_request(CHOICE["title"])
        await page.get_by_role("button", name="us-east-1").click()
        await page.get_by_role("button", name="Send now").click()
        await done()
        assert (await answered(bridge, ids[CHOICE["title"]])).answer.values == {"region": "us-east-1"}  # type: ignore[union-attr]

        await open_request(MULTI["title"])
        await page.get_by_label("vpn").check()
        await page.get_by_label("crm").check()
        await page.get_by_role("button", name="Send answer").click()
        await done()
        assert (await answered(bridge, ids[MULTI["title"]])).answer.values == {"systems": ["crm", "vpn"]}  # type: ignore[union-attr]

        await open_request(TEXT["title"])
        await page.fill("textarea[name='q.reply']", "Refund sent today.\nSorry!")
        await page.get_by_role("button", name="Send answer").click()
        await done()
        assert (await answered(bridge, ids[TEXT["title"]])).answer.values == {"reply": "Refund sent today.\nSorry!"}  # type: ignore[union-attr]

        await open_request(SECRET["title"])
        assert await page.get_attribute("input[name='q.password']", "type") == "password"
        await page.fill("input[name='q.password']", "s3cret-typed-in-browser")
        await page.get_by_role("button", name="Send answer").click()
        await done()
        assert "s3cret-typed-in-browser" not in await page.content()
        assert "[secret]" in await page.content()

        await open_request(FORM["title"])
        await page.fill("input[name='q.vendor.company']", "ACME")
        await page.select_option("select[name='q.vendor.tier']", "gold")
        await page.fill("textarea[name='q.vendor.notes']", "net 30")
        await page.get_by_role("button", name="Send answer").click()
        await done()
        shown = await page.locator("dl.answers").inner_text()
        assert shown == "Vendor details\nCompany\nACME\nTier\ngold\nNotes\nnet 30"  # labelled, not JSON
        form = await answered(bridge, ids[FORM["title"]])
        assert form.answer is not None
        assert form.answer.values == {"vendor": {"company": "ACME", "tier": "gold", "notes": "net 30"}}

        await open_request(EDIT["title"])
        editor = page.locator("textarea[name='q.args']")
        assert json.loads(await editor.input_value()) == {"replicas": 3, "image": "api:2"}
        await editor.fill('{"replicas": 5, ')
        error = page.locator("[id='err-q.args']")
        await error.wait_for(state="visible")
        assert "not valid JSON" in await error.inner_text()
        await page.get_by_role("button", name="Send answer").click()  # blocked in the browser
        assert (await bridge.service.get(ids[EDIT["title"]])).answer is None  # type: ignore[union-attr]
        await editor.fill('{"replicas": 5, "image": "api:3", "dry_run": true}')
        await error.wait_for(state="hidden")
        # the changes are shown before they are sent
        changes = page.locator(".diff-live table.diff tbody tr")
        assert await changes.all_inner_texts() == ["replicas\t3\t5", "image\t\"api:2\"\t\"api:3\"",
                                                   "dry_run\t(not there)\ttrue"]
        await editor.fill('{"replicas": 5, "image": "api:3"}')
        await changes.nth(2).wait_for(state="detached")
        await page.get_by_role("button", name="Send answer").click()
        await done()
        edit = await answered(bridge, ids[EDIT["title"]])
        assert edit.answer is not None and edit.answer.values == {"args": {"replicas": 5, "image": "api:3"}}


async def test_live_updates_arrive_without_reloading(tmp_path: Path, browser: Browser) -> None:
    async with running_bridge(tmp_path, {"web": {"poll_interval_s": 0.2}}) as bridge, new_page(browser) as page:
        first = await create(bridge, CONFIRM)
        await page.goto(f"{bridge.base_url}/inbox")
        await page.locator(f"#row-{first}").wait_for()
        await page.evaluate("window.__sameDocument = true")
        arriving = await create(bridge, {**CHOICE, "title": "Arrived while watching"})
        await page.locator(f"#row-{arriving}").wait_for()
        assert await page.evaluate("window.__sameDocument === true")  # no reload happened
        # an answer given elsewhere (the API) removes the row from the open list
        async with httpx.AsyncClient(base_url=bridge.base_url) as api:
            assert (await api.post(f"/v1/requests/{first}/answer", json={"value": "yes"})).status_code == 200
        await page.locator(f"#row-{first}").wait_for(state="detached")
        assert await page.evaluate("window.__sameDocument === true")

        # a person looking at the form sees it close when someone else answers
        await page.goto(f"{bridge.base_url}/inbox/r/{arriving}")
        await page.evaluate("window.__sameDocument = true")
        assert await page.locator("#answer-form").count() == 1
        async with httpx.AsyncClient(base_url=bridge.base_url) as api:
            response = await api.post(f"/v1/requests/{arriving}/answer",
                                      json={"value": "eu-west-1", "responder": "erin"})
            assert response.status_code == 200
        await page.locator("#closed-notice").wait_for()
        assert await page.locator("#answer-form").count() == 0
        assert "“eu-west-1” chosen by erin through the API" in await page.locator("#closed-notice").inner_text()
        assert "chosen by erin" in await page.locator("#request-top .decision").inner_text()
        assert await page.evaluate("window.__sameDocument === true")


async def test_login_in_the_browser_and_answers_carry_the_name(tmp_path: Path, browser: Browser) -> None:
    config = {"web": {"password": "browser-pass-1"}}
    async with running_bridge(tmp_path, config) as bridge, new_page(browser) as page:
        rid = await create(bridge, CONFIRM)
        await page.goto(f"{bridge.base_url}/inbox/r/{rid}")
        await page.wait_for_url("**/inbox/login?next=*")
        await page.fill("#login-name", "Frank")
        await page.fill("#login-secret", "wrong-password")
        await page.get_by_role("button", name="Log in").click()
        await page.get_by_text("wrong password or token").wait_for()
        await page.fill("#login-name", "Frank")
        await page.fill("#login-secret", "browser-pass-1")
        await page.get_by_role("button", name="Log in").click()
        await page.wait_for_url(f"**/inbox/r/{rid}")
        assert "hitl_session" not in await page.evaluate("document.cookie")  # HttpOnly
        await page.get_by_role("button", name="Approve").click()
        await page.get_by_role("button", name="Send now").click()
        await page.get_by_text("Your answer was recorded.").wait_for()
        request = await answered(bridge, rid)
        assert request.answer is not None and request.answer.responder.name == "Frank"
        assert request.answer.responder.key == "web:shared-password"  # the password is one identity
        await page.get_by_text("shared password: no vote where several people must approve").wait_for()


async def test_answering_works_with_javascript_switched_off(tmp_path: Path, browser: Browser) -> None:
    async with running_bridge(tmp_path) as bridge, \
            new_page(browser, java_script_enabled=False) as page:
        ids = [await create(bridge, CONFIRM), await create(bridge, FORM), await create(bridge, EDIT)]
        await page.goto(f"{bridge.base_url}/inbox/r/{ids[0]}")
        await page.fill("#in-reason", "ship it")
        await page.get_by_role("button", name="Approve").click()
        # one tap without JavaScript: a check step first, nothing recorded yet
        await page.get_by_role("heading", name="Check your answer").wait_for()
        assert "You are about to approve — ship it" in await page.locator(".decision").inner_text()
        assert (await bridge.service.get(ids[0])).answer is None  # type: ignore[union-attr]
        await page.get_by_role("button", name="Approve").click()
        await page.get_by_text("Your answer was recorded.").wait_for()
        await page.goto(f"{bridge.base_url}/inbox/r/{ids[2]}")
        await page.fill("textarea[name='q.args']", '{"replicas": 4, "image": "api:2"}')
        await page.get_by_role("button", name="Send answer").click()
        await page.get_by_role("heading", name="Check your answer").wait_for()
        assert await page.locator("table.diff tbody tr").all_inner_texts() == ["replicas\t3\t4"]
        await page.get_by_role("button", name="Send answer").click()
        await page.get_by_text("Your answer was recorded.").wait_for()
        await page.goto(f"{bridge.base_url}/inbox/r/{ids[1]}")
        await page.fill("input[name='q.vendor.company']", "Initech")
        await page.select_option("select[name='q.vendor.tier']", "basic")
        await page.get_by_role("button", name="Send answer").click()
        await page.get_by_text("Your answer was recorded.").wait_for()
        confirm = await answered(bridge, ids[0])
        assert confirm.answer is not None and confirm.answer.values == {"ok": "yes"}
        assert confirm.answer.reason == "ship it"
        assert (await answered(bridge, ids[2])).answer.values == {"args": {"replicas": 4, "image": "api:2"}}  # type: ignore[union-attr]
        form = await answered(bridge, ids[1])
        assert form.answer is not None and form.answer.values == {"vendor": {"company": "Initech", "tier": "basic"}}
