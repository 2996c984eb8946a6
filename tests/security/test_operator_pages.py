"""/metrics, /docs and /openapi.json follow `http.api_tokens` (a browser gets there through an
inbox login); `http.metrics_public: true` opens /metrics alone for scrapers."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.harness import running_bridge
from tests.security.browsers import CHROME
from tests.web.helpers import Person, csrf_of

TOKEN = "api-token-0123456789abcdef"
PAGES = ("/metrics", "/docs", "/openapi.json")
NAVIGATE = {"User-Agent": CHROME, "Accept": "text/html,application/xhtml+xml,*/*;q=0.8",
            "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}


async def test_operator_pages_need_a_token_or_an_inbox_session(tmp_path: Path) -> None:
    config = {"http": {"api_tokens": {"ops": TOKEN}}, "web": {"password": "open-sesame-42"}}
    async with running_bridge(tmp_path, config) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        for path in PAGES:
            refused = await http.get(path)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer", path
            assert "hitl_requests" not in refused.text and "openapi" not in refused.text
            wrong = await http.get(path, headers={"Authorization": "Bearer not-the-token-000000"})
            assert wrong.status_code == 401, path
            ok = await http.get(path, headers={"Authorization": f"Bearer {TOKEN}"})
            assert ok.status_code == 200, path
        assert "hitl_requests" in (await http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})).text
        assert (await http.get("/healthz")).status_code == 200  # probes stay open

        async with Person(bridge.base_url) as person:  # an operator in a browser
            to_login = await person.http.get("/docs", headers=NAVIGATE)
            assert to_login.status_code == 303 and to_login.headers["location"] == "/inbox/login?next=/docs"
            login_page = await person.get(to_login.headers["location"])
            form = {"name": "ops-person", "secret": "open-sesame-42", "next": "/docs"}
            logged_in = await person.submit("/inbox/login", form, csrf=csrf_of(login_page.text))
            assert logged_in.status_code == 303 and logged_in.headers["location"] == "/docs"
            assert (await person.http.get("/docs", headers=NAVIGATE)).status_code == 200
            assert (await person.http.get("/openapi.json")).json()["info"]["title"] == "hitl-bridge"
            assert (await person.http.get("/v1/requests")).status_code == 401  # a session is not an API token
            page = await person.get("/inbox")
            await person.submit("/inbox/logout", {}, csrf=csrf_of(page.text))
            assert (await person.http.get("/openapi.json")).status_code == 401


async def test_metrics_public_opens_metrics_only(tmp_path: Path) -> None:
    config = {"http": {"api_tokens": [TOKEN], "metrics_public": True}}
    async with running_bridge(tmp_path, config) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        assert (await http.get("/metrics")).status_code == 200
        assert (await http.get("/openapi.json")).status_code == 401
        assert (await http.get("/docs")).status_code == 401


async def test_without_tokens_the_pages_are_open_like_v1(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        for path in PAGES:
            assert (await http.get(path)).status_code == 200, path
