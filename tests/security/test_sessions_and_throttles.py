"""Logging out ends the session in the store (a copied cookie dies, on every replica); failed
logins are throttled per address and per account name; wrong bearer tokens get 429."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.harness import make_settings, running_bridge
from tests.web.helpers import CONFIRM, Person, create, csrf_of

PASSWORD = "open-sesame-42"
API_TOKEN = "api-token-0123456789abcdef"
LOCKED: dict[str, Any] = {"web": {"password": PASSWORD, "session_secret": "s" * 32}}


#: the test's own connections come from 127.0.0.1: a proxy the bridge is told to believe
BEHIND_PROXY: dict[str, Any] = {"trusted_proxies": ["127.0.0.1"]}


def from_address(address: str) -> dict[str, str]:
    """A client at `address` (behind the local proxy the bridge trusts: X-Forwarded-For)."""
    return {"X-Forwarded-For": address}


async def test_logout_ends_the_session_for_every_copy_of_the_cookie(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, LOCKED) as bridge, Person(bridge.base_url) as person:
        assert (await person.login(PASSWORD, name="dana")).status_code == 303
        cookie = person.http.cookies["hitl_session"]
        async with httpx.AsyncClient(base_url=bridge.base_url, cookies={"hitl_session": cookie}) as thief:
            assert (await thief.get("/inbox")).status_code == 200  # a copied cookie works while logged in
            page = await person.get("/inbox")
            out = await person.submit("/inbox/logout", {}, csrf=csrf_of(page.text))
            assert out.status_code == 303
            assert (await thief.get("/inbox")).status_code == 303  # ...and not after the logout
            assert (await thief.get("/inbox/live")).status_code == 401
        assert (await person.get("/inbox")).status_code == 303


async def test_a_logout_on_one_replica_ends_the_session_on_the_other(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, LOCKED)  # one store, one session_secret: two replicas
    async with running_bridge(tmp_path, settings=settings) as one, \
            running_bridge(tmp_path, settings=settings) as two, \
            Person(one.base_url) as person, httpx.AsyncClient(base_url=two.base_url) as other:
        rid = await create(one, CONFIRM)
        assert (await person.login(PASSWORD, name="dana")).status_code == 303
        other.cookies.set("hitl_session", person.http.cookies["hitl_session"])
        assert (await other.get(f"/inbox/r/{rid}")).status_code == 200
        page = await person.get("/inbox")
        assert (await person.submit("/inbox/logout", {}, csrf=csrf_of(page.text))).status_code == 303
        assert (await other.get(f"/inbox/r/{rid}")).status_code == 303


async def test_failed_logins_are_throttled_per_name_across_addresses(tmp_path: Path) -> None:
    config = {"web": {"password": PASSWORD, "max_login_failures": 3}, "http": BEHIND_PROXY}
    async with running_bridge(tmp_path, config) as bridge, Person(bridge.base_url) as person:
        await person.get("/inbox/login")
        for n in range(3):  # a guesser moving from address to address, always at "ana"
            person.http.headers.update(from_address(f"198.51.100.{n + 1}"))
            wrong = await person.submit("/inbox/login", {"name": "ana", "secret": f"guess-{n}-xyz"})
            assert wrong.status_code == 401
        person.http.headers.update(from_address("198.51.100.99"))
        blocked = await person.submit("/inbox/login", {"name": "Ana", "secret": PASSWORD})
        assert blocked.status_code == 429 and "this name" in blocked.text
        assert "hitl_session" not in blocked.headers.get("set-cookie", "")
        other = await person.submit("/inbox/login", {"name": "bo", "secret": PASSWORD})
        assert other.status_code == 303  # another account from the same address is fine


async def test_wrong_bearer_tokens_are_throttled_per_address(tmp_path: Path) -> None:
    config = {"http": {"api_tokens": {"ci": API_TOKEN}, "max_auth_failures": 5, **BEHIND_PROXY}}
    async with running_bridge(tmp_path, config) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as http:
        guesser = from_address("203.0.113.9")
        for n, path in enumerate(["/v1/requests", "/inbox", "/metrics", "/v1/requests", "/inbox/live"]):
            wrong = await http.get(path, headers={**guesser, "Authorization": f"Bearer guess-{n:020d}"})
            assert wrong.status_code == 401, path  # every wrong token counts, wherever it is tried
        for path in ("/v1/requests", "/inbox"):  # every route that reads a bearer token
            blocked = await http.get(path, headers={**guesser, "Authorization": f"Bearer {API_TOKEN}"})
            assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) >= 1
        right = await http.get("/v1/requests", headers={**from_address("203.0.113.10"),
                                                        "Authorization": f"Bearer {API_TOKEN}"})
        assert right.status_code == 200  # another address is not held back
        assert (await http.get("/healthz", headers=guesser)).status_code == 200  # nor is what needs no token
