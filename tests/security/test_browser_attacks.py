"""A web page cannot drive the loopback daemon: DNS rebinding is refused by the Host check,
and cross-site writes to /v1 by Origin / Sec-Fetch-Site and the JSON-only rule. Each case
sends what a browser sends (tests/security/browsers.py) to the real daemon."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from bridge.daemon import Daemon
from bridge.models import RequestState
from tests.harness import running_bridge, state_is, wait_for
from tests.security.browsers import (
    TEXT_PLAIN_JSON,
    cross_site_form,
    no_cors_fetch,
    rebound_fetch,
    same_origin_fetch,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
CONFIRM = {"title": "Deploy api to prod?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def bridge(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Daemon]:
    """The quick start: loopback, no tokens, the web inbox open."""
    async with running_bridge(tmp_path_factory.mktemp("browser")) as daemon:
        yield daemon


@pytest_asyncio.fixture(loop_scope="module")
async def http(bridge: Daemon) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=bridge.base_url, follow_redirects=False) as client:
        yield client


async def count(http: httpx.AsyncClient) -> int:
    return len((await http.get("/v1/requests", params={"limit": 1000})).json()["requests"])


async def create(bridge: Daemon, http: httpx.AsyncClient, **extra: Any) -> str:
    """A request, once posted (posting follows the 201): what an attack must leave as it is."""
    response = await http.post("/v1/requests", json={**CONFIRM, **extra})
    assert response.status_code == 201, response.text
    rid = str(response.json()["id"])
    await wait_for(lambda: state_is(bridge, rid, RequestState.posted))
    return rid


async def test_dns_rebinding_reads_and_writes_nothing(bridge: Daemon, http: httpx.AsyncClient) -> None:
    rid = await create(bridge, http, title="Rotate the prod database password")
    read = await http.get("/v1/requests", headers=rebound_fetch(bridge.port))
    assert read.status_code == 400 and "allowed_hosts" in read.json()["detail"]
    assert "Rotate" not in read.text
    inbox = await http.get(f"/inbox/r/{rid}", headers=rebound_fetch(bridge.port))
    assert inbox.status_code == 400 and "Rotate" not in inbox.text
    # the page cannot answer through the inbox or the API either
    form = await http.post(f"/inbox/r/{rid}/answer", data={"q.ok": "yes", "csrf": "x"},
                           headers={**rebound_fetch(bridge.port, method="POST"),
                                    "Content-Type": "application/x-www-form-urlencoded"})
    api = await http.post(f"/v1/requests/{rid}/answer", json={"value": "yes"},
                          headers={**rebound_fetch(bridge.port, method="POST"), "Content-Type": "application/json"})
    created = await http.post("/v1/requests", json=CONFIRM,
                              headers={**rebound_fetch(bridge.port, method="POST"), "Content-Type": "application/json"})
    assert (form.status_code, api.status_code, created.status_code) == (400, 400, 400)
    assert (await http.get(f"/v1/requests/{rid}")).json()["state"] == "posted"


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "LOCALHOST.", "127.0.0.1:1"])
async def test_loopback_names_are_served(bridge: Daemon, http: httpx.AsyncClient, host: str) -> None:
    assert (await http.get("/v1/requests", headers={"Host": host})).status_code == 200


@pytest.mark.parametrize("host", ["attacker.example", "127.0.0.1.attacker.example", "localhost.evil",
                                  "127.0.0.1@evil.example", "[::1", "", "x" * 400, "evil.example:80:80"])
async def test_foreign_or_broken_hosts_are_refused(bridge: Daemon, http: httpx.AsyncClient, host: str) -> None:
    response = await http.get("/inbox", headers={"Host": host})
    assert response.status_code == 400


async def test_probes_answer_any_host(bridge: Daemon, http: httpx.AsyncClient) -> None:
    """A kubelet probes the pod's IP, Prometheus scrapes it: no name to configure for those."""
    assert (await http.get("/healthz", headers={"Host": "10.1.2.3:8787"})).status_code == 200
    assert (await http.get("/readyz", headers={"Host": "10.1.2.3:8787"})).status_code == 200
    assert (await http.get("/metrics", headers={"Host": "10.1.2.3:8787"})).status_code == 200


@pytest.mark.parametrize(("enctype", "body"), [
    ("text/plain", TEXT_PLAIN_JSON),
    ("application/x-www-form-urlencoded", b"title=pwned&questions=x"),
    ("multipart/form-data; boundary=b",
     b'--b\r\nContent-Disposition: form-data; name="title"\r\n\r\npwned\r\n--b--\r\n'),
], ids=["text-plain", "urlencoded", "multipart"])
async def test_cross_site_forms_cannot_create_requests(bridge: Daemon, http: httpx.AsyncClient, enctype: str,
                                                       body: bytes) -> None:
    before = await count(http)
    response = await http.post("/v1/requests", content=body, headers=cross_site_form(bridge.port, enctype))
    assert response.status_code == 403 and "cross-site" in response.json()["detail"]
    # a browser that strips Origin and Sec-Fetch-* still cannot send JSON without asking first
    bare = {"Host": f"127.0.0.1:{bridge.port}", "Content-Type": enctype}
    response = await http.post("/v1/requests", content=body, headers=bare)
    assert response.status_code == 415 and "application/json" in response.json()["detail"]
    assert await count(http) == before


async def test_no_cors_fetch_cannot_cancel_or_redeliver(bridge: Daemon, http: httpx.AsyncClient) -> None:
    rid = await create(bridge, http)
    for action in ("cancel", "redeliver", "answer"):
        response = await http.post(f"/v1/requests/{rid}/{action}", headers=no_cors_fetch(bridge.port))
        assert response.status_code == 403, action
    assert (await http.get(f"/v1/requests/{rid}")).json()["state"] == "posted"


async def test_programs_and_the_bridges_own_pages_still_write(bridge: Daemon, http: httpx.AsyncClient) -> None:
    rid = await create(bridge, http)  # curl / the clients: JSON, no Origin
    cancelled = await http.post(f"/v1/requests/{rid}/cancel")  # no body at all
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    same = await http.post("/v1/requests", json=CONFIRM, headers=same_origin_fetch(bridge.port))
    assert same.status_code == 201
    charset = await http.post("/v1/requests", content=b'{"title": "x", "questions": [{"prompt": "?"}]}',
                              headers={"Content-Type": "application/json; charset=utf-8"})
    assert charset.status_code == 201


async def test_refused_hosts_are_logged_rate_limited(bridge: Daemon, http: httpx.AsyncClient,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="hitl_bridge.http")
    for _ in range(50):
        assert (await http.get("/v1/requests", headers={"Host": "flood.example"})).status_code == 400
    lines = [r for r in caplog.records if "allowed_hosts" in r.getMessage()]
    assert len(lines) <= 1  # one per 10 s at most (none if an earlier test logged within the window)
    assert (await http.get("/healthz")).status_code == 200


async def test_public_names_and_explicit_lists(tmp_path: Path) -> None:
    config = {"http": {"public_url": "https://bridge.example.com/base"}}
    async with running_bridge(tmp_path / "a", config) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as http:
        # a reverse proxy that passes the public name on (nginx `proxy_set_header Host $host`)
        proxied = {"Host": "bridge.example.com", "X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"}
        assert (await http.get("/v1/requests", headers=proxied)).status_code == 200
        assert (await http.get("/v1/requests", headers={"Host": "127.0.0.1"})).status_code == 200
        assert (await http.get("/v1/requests", headers={"Host": "other.example.com"})).status_code == 400
    config = {"http": {"allowed_hosts": ["*.corp.example", "10.0.0.5"]}}
    async with running_bridge(tmp_path / "b", config) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as http:
        assert (await http.get("/v1/requests", headers={"Host": "hitl.corp.example:8787"})).status_code == 200
        assert (await http.get("/v1/requests", headers={"Host": "10.0.0.5:8787"})).status_code == 200
        assert (await http.get("/v1/requests", headers={"Host": "corp.example.evil"})).status_code == 400
        assert (await http.get("/v1/requests")).status_code == 400  # an explicit list replaces the defaults
        assert (await http.get("/healthz")).status_code == 200
    config = {"http": {"allowed_hosts": ["*"]}}
    async with running_bridge(tmp_path / "c", config) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as http:
        assert (await http.get("/v1/requests", headers={"Host": "anything.example"})).status_code == 200
