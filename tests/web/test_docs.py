"""/docs (Swagger UI) and /redoc work offline: every script, style and icon comes from the
daemon (the pinned fastapi-offline package ships them), and both render the API in a
browser that may not reach anything but the daemon."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from bridge.http.docs import ASSETS, ASSETS_URL
from tests.harness import running_bridge
from tests.web.browser import chromium, needs_chromium, new_page


async def test_pages_reference_only_the_daemons_own_assets(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        for path in ("/docs", "/redoc"):
            page = await client.get(path)
            assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
            assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.text), path  # no CDN, no fonts
            for url in re.findall(r"""(?:src|href)=["']([^"']+)["']""", page.text):
                asset = await client.get(url)
                assert asset.status_code == 200 and len(asset.content) > 1000, url
        script = await client.get(f"{ASSETS_URL}/swagger-ui-bundle.js")
        assert script.headers["content-type"].startswith(("text/javascript", "application/javascript"))
        assert script.content == (ASSETS / "swagger-ui-bundle.js").read_bytes()
        for bad in ("/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/nope.js", "/"):
            assert (await client.get(ASSETS_URL + bad)).status_code == 404, bad
        assert (await client.get("/openapi.json")).json()["info"]["title"] == "hitl-bridge"


@pytest.mark.browser
@needs_chromium
async def test_swagger_ui_and_redoc_render_without_the_internet(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, chromium() as browser, new_page(browser) as page:
        elsewhere: list[str] = []

        async def only_the_daemon(route: object) -> None:
            url = route.request.url  # type: ignore[attr-defined]
            if url.startswith(bridge.base_url):
                await route.continue_()  # type: ignore[attr-defined]
            else:
                elsewhere.append(url)
                await route.abort()  # type: ignore[attr-defined]

        await page.context.route("**/*", only_the_daemon)
        await page.goto(f"{bridge.base_url}/docs")
        await page.locator(".swagger-ui .info .title").get_by_text("hitl-bridge").wait_for()
        await page.locator(".opblock-summary-path", has_text="/v1/requests").first.wait_for()
        await page.goto(f"{bridge.base_url}/redoc")
        await page.locator("h1", has_text="hitl-bridge").wait_for()
        await page.get_by_text("/v1/requests").first.wait_for(state="attached")
        assert elsewhere == []
