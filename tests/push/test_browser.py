"""Web Push in a real Chromium (Debian's, headless, driven by Playwright): the person turns
notifications on from the inbox page (its script registers the real service worker and
sends the subscription to the daemon), the daemon pushes to the fake push service (which
checks VAPID and decrypts), and the decrypted message reaches the service worker as a real
`push` event; the person presses Approve in the notification the worker showed.

What is real and what is not: headless Chromium has no push service of its own without
Google's (FCM), so two steps stand in for it.
- `PushManager.subscribe` is replaced in the page by one that returns the fake push
  service's subscription (made for the key the page passed, which is checked): the page's
  own script does everything else (service worker, permission, POST with CSRF).
- The message goes to the worker through CDP `ServiceWorker.deliverPushMessage` with the
  plaintext the fake push service decrypted: a trusted `push` event, as from a push service.
- Chromium has no CDP command to press a notification's button, so the press is a
  `NotificationEvent('notificationclick', {action: 'approve'})` dispatched in the worker,
  on the notification the worker itself showed (`registration.getNotifications()`); the
  worker's own listener sends the decision (a POST with the one-use token).
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.push.subscriptions import Devices, parse_subscription
from bridge.models import RequestState
from tests.engines.mastra_server import NodeMissing
from tests.fakes.push_service import push_service
from tests.harness import ManualClock
from tests.push.helpers import ANA_TOKEN, push_config
from tests.timing.helpers import bridge_on, create, stored
from tests.web import axe
from tests.web.browser import chromium, needs_chromium, new_page

pytestmark = needs_chromium

FAKE_SUBSCRIBE = """([subscription, key]) => {
  PushManager.prototype.subscribe = async function (options) {
    const given = btoa(String.fromCharCode(...new Uint8Array(options.applicationServerKey)))
      .replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
    if (given !== key || options.userVisibleOnly !== true) throw new Error("wrong subscribe options");
    return { toJSON: () => subscription };
  };
}"""

SHOWN = """async (tag) => (await self.registration.getNotifications({ tag }))
  .map((n) => ({ title: n.title, body: n.body, actions: n.actions.map((a) => a.action), tag: n.tag }))"""

PRESS = """async ([tag, action]) => {
  const [notification] = await self.registration.getNotifications({ tag });
  self.dispatchEvent(new NotificationEvent("notificationclick", { notification, action }));
  return true;
}"""


async def until(probe: Any, check: Any, timeout: float = 10.0) -> Any:
    """Poll `probe()` until `check(result)`, with a deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = await probe()
        if check(found):
            return found
        if loop.time() > deadline:
            raise AssertionError(f"still {found!r}")
        await asyncio.sleep(0.05)


async def test_a_person_approves_from_the_notification_in_chromium(tmp_path: Path) -> None:
    async with push_service() as service, \
            bridge_on(tmp_path, ManualClock(datetime.now(UTC)), push_config(service)) as daemon, \
            chromium() as browser:
        base = daemon.base_url
        async with new_page(browser, base_url=base) as page:
            await page.context.grant_permissions(["notifications"], origin=base)
            await page.goto("/inbox/login")
            await page.fill("#login-secret", ANA_TOKEN)
            await page.get_by_role("button", name="Log in").click()
            await page.wait_for_url("**/inbox")
            assert await page.locator("link[rel=manifest]").get_attribute("href") == "/inbox/manifest.webmanifest"
            await page.get_by_role("link", name="Notifications").click()
            await page.wait_for_url("**/inbox/push")

            key = await page.locator("[data-push-on]").get_attribute("data-key")
            assert key
            subscription = service.subscribe(key)
            await page.evaluate(FAKE_SUBSCRIBE, [subscription, key])
            await page.get_by_role("button", name="Turn on notifications on this device").click()
            await page.get_by_text("Notifications are on for this device.").wait_for()
            rows = await daemon.store.kv_items("push-subscription")
            assert [row["endpoint"] for _, row in rows] == [subscription["endpoint"]]

            worker = page.context.service_workers[0] if page.context.service_workers else \
                await page.context.wait_for_event("serviceworker")
            assert worker.url.endswith("/inbox/sw.js")
            cdp = await page.context.new_cdp_session(page)
            registrations: list[dict[str, Any]] = []
            cdp.on("ServiceWorker.workerRegistrationUpdated", lambda e: registrations.extend(e["registrations"]))
            await cdp.send("ServiceWorker.enable")
            registration = await until(lambda: asyncio.sleep(0, registrations), lambda r: bool(r))
            registration_id = registration[0]["registrationId"]

            rid = await create(daemon, title="Deploy api v2.3", agent="deployer")
            sid = service.sid_of(subscription)
            received = (await service.wait_for(sid, 1))[0]
            await cdp.send("ServiceWorker.deliverPushMessage", {
                "origin": base, "registrationId": registration_id, "data": json.dumps(received.payload)})
            tag = f"hitl-{rid}"
            shown = await until(lambda: worker.evaluate(SHOWN, tag), lambda n: bool(n))
            assert shown[0]["title"] == "Approval: Deploy api v2.3" and shown[0]["actions"] == ["approve", "reject"]

            await worker.evaluate(PRESS, [tag, "approve"])
            request = await until(lambda: stored(daemon, rid), lambda r: not r.is_open)
            assert request.state in (RequestState.answered, RequestState.delivered)
            assert request.answer is not None and request.answer.responder.key == "push:ana"
            assert request.answer.via == "push" and request.answer.values == {"ok": "yes"}
            result = await until(lambda: worker.evaluate(SHOWN, tag), lambda n: bool(n) and n[0]["body"] == "Approved.")
            assert result[0]["actions"] == []

            await daemon.service.drain()  # the outcome is pushed with the same tag and replaces it
            closed = (await service.wait_for(sid, 2))[1]
            await cdp.send("ServiceWorker.deliverPushMessage", {
                "origin": base, "registrationId": registration_id, "data": json.dumps(closed.payload)})
            replaced = await until(lambda: worker.evaluate(SHOWN, tag),
                                   lambda n: len(n) == 1 and n[0]["title"].startswith("Approved by ana"))
            assert replaced[0]["actions"] == []
            assert service.refused == []


async def test_the_notifications_page_has_no_serious_accessibility_violations(tmp_path: Path) -> None:
    try:
        script = axe.install()
    except NodeMissing as exc:
        pytest.skip(f"axe-core cannot be installed here: {exc}")
    async with push_service() as service, \
            bridge_on(tmp_path, ManualClock(datetime.now(UTC)), push_config(service)) as daemon, \
            chromium() as browser:
        devices = Devices(daemon.store)
        for n in (1, 2):
            await devices.add(parse_subscription(service.subscribe("k"), "ana", ["127.0.0.1"], added="2026-01-01T12:00",
                                                 agent=f"Mozilla/5.0 (Linux; Android 15) Chrome/13{n} Mobile"), 10)
        await devices.drop((await devices.of("ana"))[0], 410, datetime.now(UTC))
        found: dict[str, Any] = {}
        for scheme in ("light", "dark"):
            async with new_page(browser, base_url=daemon.base_url, viewport={"width": 390, "height": 844},
                                color_scheme=scheme, bypass_csp=True, is_mobile=True) as page:
                await page.goto("/inbox/login")
                await page.fill("#login-secret", ANA_TOKEN)
                await page.get_by_role("button", name="Log in").click()
                await page.wait_for_url("**/inbox")
                await page.goto("/inbox/push")
                await page.locator("[data-push-on]").wait_for(state="visible")
                assert "Dropped devices" in await page.content()
                found[scheme] = await axe.violations(page, script)
        assert found == {"light": [], "dark": []}, found
