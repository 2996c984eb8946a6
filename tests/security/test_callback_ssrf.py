"""Callbacks cannot probe the inside: a bridge that listens beyond loopback refuses loopback,
private, link-local and multicast targets (every spelling of them, and names that resolve
to them, checked on the address it connects to), says so in `last_error` without a word
from the target, and calls them only when the operator opts in.

The daemon here listens on 0.0.0.0 (that is what makes it refuse); every connection the
tests make still goes to 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from adapters.webhook.egress import CallbackPolicy, CallbackRefused, GuardedTransport, IPAddress, inside_kind
from bridge.daemon import Daemon
from tests.harness import CallbackReceiver, callback_receiver, running_bridge, wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")
TOKEN = "api-token-0123456789abcdef"
SECRET = "whsec-0123456789abcdef"
BEYOND_LOOPBACK = {"http": {"listen": "0.0.0.0:0", "api_tokens": [TOKEN]},
                   "delivery": {"first_retry": "20ms", "max_backoff": "100ms"}}


def body(url: str) -> dict[str, Any]:
    return {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}],
            "callback": {"url": url, "secret": SECRET}}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def rx() -> AsyncIterator[CallbackReceiver]:
    async with callback_receiver() as receiver:
        yield receiver


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def bridge(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Daemon]:
    async with running_bridge(tmp_path_factory.mktemp("ssrf"), BEYOND_LOOPBACK) as daemon:
        yield daemon


@pytest_asyncio.fixture(loop_scope="module")
async def api(bridge: Daemon) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}",
                                 headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


INSIDE = [
    ("127.0.0.1", "loopback"), ("127.1", "loopback"), ("2130706433", "loopback"), ("0x7f.1", "loopback"),
    ("0x7f000001", "loopback"), ("[::1]", "loopback"), ("[::ffff:127.0.0.1]", "loopback"),
    ("[::ffff:7f00:1]", "loopback"), ("[64:ff9b::7f00:1]", "loopback"), ("[2002:7f00:1::]", "loopback"),
    ("0.0.0.0", "unspecified"), ("0", "unspecified"), ("[::]", "unspecified"),
    ("10.0.0.1", "private"), ("172.16.0.1", "private"), ("192.168.1.1", "private"), ("[fc00::1]", "private"),
    ("169.254.169.254", "link-local"), ("[fe80::1]", "link-local"), ("224.0.0.1", "multicast"),
    ("100.64.0.1", "non-public"),
]


@pytest.mark.parametrize(("host", "kind"), INSIDE, ids=[h for h, _ in INSIDE])
async def test_inside_addresses_are_refused_at_intake(api: httpx.AsyncClient, host: str, kind: str) -> None:
    response = await api.post("/v1/requests", json=body(f"http://{host}:8787/v1/requests"))
    assert response.status_code == 422, response.text
    assert response.json()["detail"].startswith("callback.url: the host is") and kind in response.json()["detail"]


async def test_names_that_resolve_inside_are_refused_when_delivering(
        bridge: Daemon, api: httpx.AsyncClient, rx: CallbackReceiver) -> None:
    """`localhost` is a name: no DNS at intake, the connect-time check stops it. The daemon's
    own /v1 is one of those inside targets."""
    port = int(rx.url.rsplit(":", 1)[1].split("/")[0])
    for url in (f"http://localhost:{port}/hook", f"http://LOCALHOST:{bridge.port}/v1/requests"):
        rid = (await api.post("/v1/requests", json=body(url))).json()["id"]
        assert (await api.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})).status_code == 200

        async def failed(rid: str = rid) -> dict[str, Any] | None:
            shown = (await api.get(f"/v1/requests/{rid}")).json()
            return shown if shown["state"] == "failed" else None

        shown = await wait_for(failed)
        error = shown["outbox"][0]["last_error"]
        assert shown["outbox"][0]["dead"]  # permanent: given up at once, not retried
        assert "refused: the host resolves to a loopback address" in error and "callback_allow" in error
    assert rx.received == [] and rx.refused == 0  # nothing reached the target
    listed = (await api.get("/v1/requests", params={"limit": 1000})).json()["requests"]
    assert all(r["title"] == "Deploy?" for r in listed)  # no request was created through the callback


async def test_opting_in_reaches_inside_targets_and_never_echoes_their_replies(tmp_path: Path) -> None:
    async with callback_receiver() as rx:
        port = rx.url.rsplit(":", 1)[1].split("/")[0]
        for opt_in in ({"callback_allow": ["localhost", "hooks.example.com"]}, {"callback_allow_private": True}):
            config = {**BEYOND_LOOPBACK, "http": {**BEYOND_LOOPBACK["http"], **opt_in}}
            async with running_bridge(tmp_path / str(len(opt_in["callback_allow"]) if "callback_allow" in opt_in
                                                     else "private"), config) as daemon, \
                    httpx.AsyncClient(base_url=f"http://127.0.0.1:{daemon.port}",
                                      headers={"Authorization": f"Bearer {TOKEN}"}) as api:
                before = len(rx.received)
                rid = (await api.post("/v1/requests", json=body(f"http://localhost:{port}/hook"))).json()["id"]
                await api.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})
                await wait_for(lambda before=before: len(rx.received) > before)
        # a target that answers with an error body: the body never shows up in last_error
        rx.status = 500
        config = {**BEYOND_LOOPBACK, "http": {**BEYOND_LOOPBACK["http"], "callback_allow_private": True}}
        async with running_bridge(tmp_path / "echo", config) as daemon, \
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{daemon.port}",
                                  headers={"Authorization": f"Bearer {TOKEN}"}) as api:
            rid = (await api.post("/v1/requests", json=body(rx.url))).json()["id"]
            await api.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})

            async def error() -> str | None:
                outbox = (await api.get(f"/v1/requests/{rid}")).json()["outbox"]
                return str(outbox[0]["last_error"]) if outbox and outbox[0]["last_error"] else None

            assert await wait_for(error) == f"callback {rx.url} answered HTTP 500"


# the connect-time check itself, with a resolver that answers what a hostile DNS would --------

def resolver(answers: dict[str, list[str]], calls: list[str]) -> Any:
    async def resolve(host: str, port: int, within_s: float | None) -> list[IPAddress]:
        calls.append(host)
        return [ipaddress.ip_address(a) for a in answers[host]]
    return resolve


async def test_the_connection_goes_to_the_address_that_was_checked(rx: CallbackReceiver) -> None:
    """`rebind.test` exists only in this resolver: reaching the receiver proves the connection
    used the checked answer, not a second lookup that could say something else."""
    calls: list[str] = []
    port = int(rx.url.rsplit(":", 1)[1].split("/")[0])
    resolve = resolver({"rebind.test": ["127.0.0.1"]}, calls)
    transport = GuardedTransport(CallbackPolicy([], allow_private=True), resolve)
    async with httpx.AsyncClient(transport=transport) as client:
        before = len(rx.received)
        response = await client.post(f"http://rebind.test:{port}/hook", content=b"{}")
    assert response.status_code == 200 and len(rx.received) == before + 1
    assert rx.received[-1].headers["host"] == f"rebind.test:{port}" and calls == ["rebind.test"]


@pytest.mark.parametrize("answers", [["93.184.215.14", "127.0.0.1"], ["10.1.2.3"], ["::ffff:169.254.169.254"]])
async def test_any_inside_answer_refuses_the_name(answers: list[str]) -> None:
    calls: list[str] = []
    transport = GuardedTransport(CallbackPolicy([], allow_private=False), resolver({"mixed.test": answers}, calls))
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(CallbackRefused, match="resolves to a"):
            await client.post("http://mixed.test/hook", content=b"{}")
    assert calls == ["mixed.test"]


async def test_a_listed_host_is_checked_at_connect_too() -> None:
    """A URL that another parser reads differently still meets the allow-list at connect time."""
    transport = GuardedTransport(CallbackPolicy(["hooks.example.com"], allow_private=False),
                                 resolver({"evil.example": ["93.184.215.14"]}, []))
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(CallbackRefused, match="callback_allow"):
            await client.post("http://hooks.example.com@evil.example/", content=b"{}")


async def test_public_addresses_are_not_inside() -> None:
    for public in ("93.184.215.14", "2606:4700::1111", "8.8.8.8"):
        assert inside_kind(ipaddress.ip_address(public)) is None, public
