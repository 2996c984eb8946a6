"""Make the documentation's picture of the notifications page (docs/push-phone.png): a
daemon on loopback with Web Push on, a person logged in as `ana` on a phone-sized headless
Chromium (Debian's /usr/bin/chromium, driven by Playwright), one device turned on and one
that its push service dropped.

    .venv/bin/python scripts/screenshot_push.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.push.subscriptions import Devices, parse_subscription  # noqa: E402
from bridge.config import Settings  # noqa: E402
from bridge.daemon import Daemon  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ANA_TOKEN = "ana-inbox-token-0123456789"
TARGET = ROOT / "docs" / "push-phone.png"
P256 = "BEl62iUYgUivxIkv69yViEuiBIa-Ib9-SkvMeAtA3LFgDzkrxZJjSgSnfckjBJuBkr3qBUYIHBQFLXYp5Nksh8U"
AUTH = "tBHItJI5svbpez7KI4CCXg"
PHONE = "Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131 Mobile"
LAPTOP = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"


async def main() -> None:
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory() as tmp:
        daemon = Daemon(Settings.model_validate({
            "store": {"url": f"sqlite:///{tmp}/bridge.db"}, "http": {"listen": "127.0.0.1:0"},
            "sources": [{"type": "webhook"}], "web": {"tokens": {"ana": ANA_TOKEN}, "title": "Acme agents"},
            "push": {"subject": "mailto:ops@example.com"}, "people": {"ana": ["web:ana", "push:ana"]}}))
        await daemon.start()
        try:
            devices = Devices(daemon.store)
            now = datetime.now(UTC)
            for n, agent in ((1, PHONE), (2, LAPTOP)):
                sub = {"endpoint": f"https://fcm.googleapis.com/fcm/send/example-{n}",
                       "keys": {"p256dh": P256, "auth": AUTH}}
                await devices.add(parse_subscription(sub, "ana", ["fcm.googleapis.com"], added=now.isoformat(),
                                                     agent=agent), limit=10)
            dropped = (await devices.of("ana"))[1]
            await devices.drop(dropped, 410, now)
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM,
                                                           args=["--no-sandbox", "--headless"])
                context = await browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2,
                                                    is_mobile=True, has_touch=True)
                page = await context.new_page()
                await page.goto(f"{daemon.base_url}/inbox/login")
                await page.fill("#login-secret", ANA_TOKEN)
                await page.get_by_role("button", name="Log in").click()
                await page.wait_for_url("**/inbox")
                await page.goto(f"{daemon.base_url}/inbox/push")
                await page.locator("[data-push-on]").wait_for(state="visible")
                await page.screenshot(path=str(TARGET), full_page=True)
                await browser.close()
            print(f"wrote {TARGET.relative_to(ROOT)}")
        finally:
            await daemon.stop()


if __name__ == "__main__":
    asyncio.run(main())
