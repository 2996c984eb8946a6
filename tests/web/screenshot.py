"""Make docs/inbox.png: the inbox with the demo's requests, in headless Chromium.

    .venv/bin/python -m tests.web.screenshot docs/inbox.png
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import httpx

from bridge.demo import demo_requests, demo_settings
from tests.harness import make_settings, running_bridge
from tests.web.browser import chromium, new_page


async def shoot(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = demo_settings(make_settings(Path(tmp)), "127.0.0.1:0")
        async with running_bridge(Path(tmp), settings=settings) as bridge, chromium() as browser:
            ids = {}
            async with httpx.AsyncClient(base_url=bridge.base_url) as api:
                for spec in reversed(demo_requests()):
                    body = {k: v for k, v in spec.items() if k != "key"}
                    response = await api.post("/v1/requests", json=body)
                    response.raise_for_status()
                    ids[spec["key"]] = response.json()["id"]
            # what the list looks like 30 s later, without waiting 30 s
            await bridge.store.update_request(ids["escalate"], escalation_level=1, now=bridge.clock.now())
            async with new_page(browser, viewport={"width": 1100, "height": 900}, device_scale_factor=1) as page:
                await page.goto(f"{bridge.base_url}/inbox")
                await page.wait_for_selector("html[data-js=ready]")
                await page.screenshot(path=str(out), full_page=False)
                if len(sys.argv) > 2:  # a detail page too, for a look at the forms
                    await page.goto(f"{bridge.base_url}/inbox/r/{ids[sys.argv[2]]}")
                    await page.screenshot(path=str(out.with_suffix(".detail.png")), full_page=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    asyncio.run(shoot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/inbox.png")))
