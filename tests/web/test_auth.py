"""Who may open the inbox: open on loopback with no credentials; otherwise a login (password
+ name, or a token) in an HttpOnly session cookie; CSRF on every form; forged things refused."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.harness import running_bridge
from tests.web.helpers import CONFIRM, Person, create, csrf_of

PASSWORD = "open-sesame-42"
TOKEN = "t" * 24
LOCKED = {"web": {"password": PASSWORD, "tokens": {"carol": TOKEN}}}


async def test_open_on_loopback_without_credentials(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        page = await person.get("/inbox")
        assert page.status_code == 200
        assert "Log out" not in page.text
        login = await person.get("/inbox/login")
        assert login.status_code == 303 and login.headers["location"] == "/inbox"


async def test_pages_need_a_login_when_a_password_is_configured(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, LOCKED) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, CONFIRM)
        page = await person.get(f"/inbox/r/{rid}")
        assert page.status_code == 303
        assert page.headers["location"] == f"/inbox/login?next=%2Finbox%2Fr%2F{rid}"
        assert (await person.get("/inbox/live")).status_code == 401
        assert (await person.get(f"/inbox/r/{rid}/live")).status_code == 401
        refused = await person.submit(f"/inbox/r/{rid}/answer", {"q.ok": "yes"}, csrf="x")
        assert refused.status_code == 401
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.is_open


async def test_password_login_sets_an_httponly_session_and_records_the_name(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, LOCKED) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, CONFIRM)
        response = await person.login(PASSWORD, name="Dana Ops")
        assert response.status_code == 303 and response.headers["location"] == "/inbox"
        cookie = response.headers["set-cookie"]
        assert "hitl_session=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert PASSWORD not in cookie
        assert (await person.get("/inbox")).status_code == 200
        assert (await person.answer(rid, {"q.ok": "yes"})).status_code == 303
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.answer is not None
        assert stored.answer.responder.key == "web:shared-password" and stored.answer.via == "web"
        assert stored.answer.responder.name == "Dana Ops"  # shown, but the password is one identity
        events = await bridge.store.list_events(rid)
        assert any(e.kind == "answered" and e.actor == "web:shared-password"
                   and e.data.get("name") == "Dana Ops" for e in events)


async def test_token_login_uses_the_token_name(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, LOCKED) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, CONFIRM)
        assert (await person.login(TOKEN)).status_code == 303
        assert (await person.answer(rid, {"q.ok": "no"})).status_code == 303
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.answer is not None and stored.answer.responder.user_id == "carol"


async def test_wrong_password_is_refused_without_echo_and_throttled(tmp_path: Path) -> None:
    config = {"web": {"password": PASSWORD, "max_login_failures": 3}}
    async with running_bridge(tmp_path, config) as bridge, Person(bridge.base_url) as person:
        for _ in range(3):
            response = await person.login("wrong-password-123", name="eve")
            assert response.status_code == 401
            assert "wrong password or token" in response.text
            assert "wrong-password-123" not in response.text
            assert "hitl_session" not in response.headers.get("set-cookie", "")
        throttled = await person.login(PASSWORD, name="eve")
        assert throttled.status_code == 429 and "too many failed logins" in throttled.text


async def test_password_login_needs_a_name(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, LOCKED) as bridge, Person(bridge.base_url) as person:
        response = await person.login(PASSWORD, name="")
        assert response.status_code == 400 and "enter your name" in response.text
        response = await person.login(PASSWORD, name="<script>")
        assert response.status_code == 400 and "<script>" not in response.text


async def test_forged_or_tampered_session_cookies_are_ignored(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, LOCKED) as bridge, Person(bridge.base_url) as person:
        response = await person.login(PASSWORD, name="dana")
        good = response.cookies["hitl_session"]
        altered = good[:-2] + ("AA" if not good.endswith("AA") else "BB")
        for cookie in (altered, good + "A", good[:-1], "s1." + "A" * 43, "v1.e30.abc", "garbage", "x" * 5000):
            async with httpx.AsyncClient(base_url=bridge.base_url, cookies={"hitl_session": cookie}) as client:
                assert (await client.get("/inbox")).status_code == 303, cookie[:40]
        async with httpx.AsyncClient(base_url=bridge.base_url, cookies={"hitl_session": good}) as client:
            assert (await client.get("/inbox")).status_code == 200


async def test_bearer_token_works_without_cookies_or_csrf(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, LOCKED) as bridge:
        rid = await create(bridge, CONFIRM)
        async with httpx.AsyncClient(base_url=bridge.base_url) as client:
            assert (await client.get("/inbox", headers={"Authorization": "Bearer nope"})).status_code == 401
            auth = {"Authorization": f"Bearer {TOKEN}"}
            assert (await client.get("/inbox", headers=auth)).status_code == 200
            response = await client.post(f"/inbox/r/{rid}/answer", data={"q.ok": "yes"}, headers=auth)
            assert response.status_code == 303
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.answer is not None and stored.answer.responder.user_id == "carol"


async def test_http_api_tokens_also_open_the_inbox(tmp_path: Path) -> None:
    api_token = "api-token-0123456789"
    async with running_bridge(tmp_path, {"http": {"api_tokens": [api_token]}}) as bridge, \
            Person(bridge.base_url) as person:
        assert (await person.get("/inbox")).status_code == 303  # no longer open
        assert (await person.login(api_token)).status_code == 303
        assert (await person.get("/inbox")).status_code == 200


async def test_csrf_missing_wrong_or_cross_site_is_refused(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, CONFIRM)
        await person.open(rid)
        path = f"/inbox/r/{rid}/answer"
        assert (await person.submit(path, {"q.ok": "yes"}, csrf="")).status_code == 403
        assert (await person.submit(path, {"q.ok": "yes"}, csrf="0" * 64)).status_code == 403
        # a page on another site posting into the loopback inbox (the classic attack on local tools)
        cross = await person.http.post(path, data={"csrf": person.csrf, "q.ok": "yes"},
                                       headers={"Origin": "http://evil.example"})
        assert cross.status_code == 403
        cross = await person.http.post(path, data={"csrf": person.csrf, "q.ok": "yes"},
                                       headers={"Sec-Fetch-Site": "cross-site"})
        assert cross.status_code == 403
        # another browser's token does not fit this browser's cookie
        async with Person(bridge.base_url) as other:
            await other.open(rid)
            assert (await person.submit(path, {"q.ok": "yes"}, csrf=other.csrf)).status_code == 403
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.is_open
        assert (await person.submit(path, {"q.ok": "yes"})).status_code == 303


async def test_login_form_and_logout_need_csrf_too(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, LOCKED) as bridge, Person(bridge.base_url) as person:
        await person.get("/inbox/login")
        refused = await person.submit("/inbox/login", {"name": "x", "secret": PASSWORD}, csrf="forged")
        assert refused.status_code == 403 and "hitl_session" not in refused.headers.get("set-cookie", "")
        assert (await person.login(PASSWORD, name="dana")).status_code == 303
        page = await person.get("/inbox")
        assert "Log out" in page.text
        assert (await person.submit("/inbox/logout", {}, csrf="forged")).status_code == 403
        assert (await person.get("/inbox")).status_code == 200
        out = await person.submit("/inbox/logout", {}, csrf=csrf_of(page.text))
        assert out.status_code == 303 and out.headers["location"] == "/inbox/login"
        assert (await person.get("/inbox")).status_code == 303


async def test_login_never_redirects_off_site(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, LOCKED) as bridge, Person(bridge.base_url) as person:
        await person.get("/inbox/login")
        for target in ("https://evil.example/", "//evil.example", "/inbox//evil.example", "javascript:alert(1)"):
            response = await person.submit("/inbox/login", {"name": "dana", "secret": PASSWORD, "next": target})
            assert response.status_code == 303
            assert response.headers["location"] == "/inbox", target


def test_bad_web_config_is_an_error_naming_the_key(tmp_path: Path) -> None:
    from bridge.clock import SystemClock
    from bridge.errors import ConfigError
    from bridge.registry import build_channels
    from bridge.store import open_store_from_url
    from tests.harness import make_settings

    cases = [({"password": "short"}, "web.password", "at least 8"),
             ({"tokens": {"bob": "too-short"}}, "web.tokens", "at least 16"),
             ({"tokens": {"<b>": "x" * 20}}, "web.tokens", "token name"),
             ({"passwrd": "x" * 10}, "web.passwrd", "unknown key")]
    for section, key, reason in cases:
        settings = make_settings(tmp_path, {"web": section})
        store = open_store_from_url(settings.store.url)  # never opened: nothing to close
        try:
            build_channels(settings, store, SystemClock())
        except ConfigError as exc:
            assert key in str(exc) and reason in str(exc), str(exc)
        else:
            raise AssertionError(f"{section} was accepted")


async def test_hostile_login_bodies_are_refused(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, LOCKED) as bridge, Person(bridge.base_url) as person:
        await person.get("/inbox/login")
        huge = await person.submit("/inbox/login", {"name": "dana", "secret": "x" * 2000})
        assert huge.status_code == 401 and "x" * 100 not in huge.text
        empty = await person.submit("/inbox/login", {"name": "dana"})
        assert empty.status_code == 401
        broken = await person.http.post("/inbox/login", content=b"--b\r\nnope",
                                        headers={"Content-Type": "multipart/form-data; boundary=b"})
        assert broken.status_code in (400, 403)
        assert "hitl_session" not in broken.headers.get("set-cookie", "")
        assert (await person.login(PASSWORD, name="dana")).status_code == 303  # still serving
