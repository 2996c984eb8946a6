"""Throttles count real clients (issue 24): `X-Forwarded-For` is believed only from
`http.trusted_proxies` (none by default: the socket's peer is the client), and guessing at a
name cannot lock its owner out of the inbox from where they log in. Clients at other loopback
addresses (127.0.0.2, ...) stand for other machines."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from bridge.config import load_settings
from bridge.errors import ConfigError
from tests.harness import running_bridge
from tests.web.helpers import Person

PASSWORD = "open-sesame-42"
API_TOKEN = "api-token-0123456789abcdef"


@asynccontextmanager
async def client_at(base_url: str, address: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client whose connections come from `address` (a loopback alias)."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(base_url=base_url, transport=transport) as http:
        yield http


def bearer(token: str, forwarded: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **({"X-Forwarded-For": forwarded} if forwarded else {})}


async def test_rotating_x_forwarded_for_gives_no_more_guesses(tmp_path: Path) -> None:
    config = {"http": {"api_tokens": {"ci": API_TOKEN}, "max_auth_failures": 5}}
    async with running_bridge(tmp_path, config) as bridge, client_at(bridge.base_url, "127.0.0.1") as guesser:
        for n in range(5):
            wrong = await guesser.get("/v1/requests", headers=bearer(f"guess-{n:020d}", f"198.51.100.{n}"))
            assert wrong.status_code == 401
        for n in range(5, 10):  # a new claimed address each time: still the same peer
            blocked = await guesser.get("/v1/requests", headers=bearer(f"guess-{n:020d}", f"198.51.100.{n}"))
            assert blocked.status_code == 429, n


async def test_a_spoofed_x_forwarded_for_cannot_lock_out_another_client(tmp_path: Path) -> None:
    config = {"http": {"api_tokens": {"ci": API_TOKEN}, "max_auth_failures": 3},
              "web": {"password": PASSWORD, "max_login_failures": 3}}
    async with running_bridge(tmp_path, config) as bridge, client_at(bridge.base_url, "127.0.0.1") as attacker, \
            client_at(bridge.base_url, "127.0.0.2") as victim:
        for n in range(6):  # wrong tokens "from" the victim's address
            await attacker.get("/v1/requests", headers=bearer(f"guess-{n:020d}", "127.0.0.2"))
        assert (await victim.get("/v1/requests", headers=bearer(API_TOKEN))).status_code == 200
        async with Person(bridge.base_url, transport=httpx.AsyncHTTPTransport(local_address="127.0.0.1")) as evil, \
                Person(bridge.base_url, transport=httpx.AsyncHTTPTransport(local_address="127.0.0.2")) as dana:
            await evil.get("/inbox/login")
            for n in range(4):
                evil.http.headers["X-Forwarded-For"] = "127.0.0.2"
                await evil.submit("/inbox/login", {"name": f"x{n}", "secret": f"guess-{n}-xyz"})
            assert (await dana.login(PASSWORD, name="dana")).status_code == 303


async def test_forwarded_headers_are_believed_from_trusted_proxies_only(tmp_path: Path) -> None:
    config = {"http": {"api_tokens": {"ci": API_TOKEN}, "max_auth_failures": 3,
                       "trusted_proxies": ["127.0.0.1/32"]}}
    async with running_bridge(tmp_path, config) as bridge, client_at(bridge.base_url, "127.0.0.1") as proxy, \
            client_at(bridge.base_url, "127.0.0.2") as direct:
        for n in range(3):  # through the proxy: one client behind it keeps guessing
            await proxy.get("/v1/requests", headers=bearer(f"guess-{n:020d}", "203.0.113.9"))
        assert (await proxy.get("/v1/requests", headers=bearer(API_TOKEN, "203.0.113.9"))).status_code == 429
        assert (await proxy.get("/v1/requests", headers=bearer(API_TOKEN, "203.0.113.10"))).status_code == 200
        for n in range(3):  # not a proxy: its header is only a claim
            await direct.get("/v1/requests", headers=bearer(f"guess-{n:020d}", f"203.0.113.{20 + n}"))
        assert (await direct.get("/v1/requests", headers=bearer(API_TOKEN, "203.0.113.30"))).status_code == 429


async def test_guessing_at_a_name_does_not_lock_its_owner_out_of_their_own_address(tmp_path: Path) -> None:
    config = {"web": {"tokens": {"ana": "ana-token-0123456789"}, "password": PASSWORD, "max_login_failures": 3},
              "http": {"trusted_proxies": ["127.0.0.1"]}}
    async with running_bridge(tmp_path, config) as bridge, Person(bridge.base_url) as ana, \
            Person(bridge.base_url) as guesser:
        ana.http.headers["X-Forwarded-For"] = "198.51.100.7"
        assert (await ana.login(PASSWORD, name="ana")).status_code == 303  # where ana logs in
        await guesser.get("/inbox/login")
        for n in range(25):  # a guesser at many addresses, always typing "ana"
            guesser.http.headers["X-Forwarded-For"] = f"203.0.113.{n + 1}"
            wrong = await guesser.submit("/inbox/login", {"name": "ana", "secret": f"guess-{n}-xyz"})
            assert wrong.status_code in (401, 429)
        guesser.http.headers["X-Forwarded-For"] = "203.0.113.200"  # a fresh address: held back for "ana"
        held = await guesser.submit("/inbox/login", {"name": "Ana", "secret": PASSWORD})
        assert held.status_code == 429 and "this name" in held.text
        async with Person(bridge.base_url) as again:  # ana, from her own address, gets in
            again.http.headers["X-Forwarded-For"] = "198.51.100.7"
            assert (await again.login(PASSWORD, name="ana")).status_code == 303
            assert (await again.get("/inbox")).status_code == 200
        async with Person(bridge.base_url) as elsewhere:  # another name from a new address is not held
            elsewhere.http.headers["X-Forwarded-For"] = "203.0.113.201"
            assert (await elsewhere.login(PASSWORD, name="bo")).status_code == 303


@pytest.mark.parametrize("entry", ["proxy.example.com", "10.0.0.0/33", "", "127.0.0.1:8080"])
def test_trusted_proxies_must_be_addresses_or_networks(tmp_path: Path, entry: str) -> None:
    path = tmp_path / "hitl-bridge.yaml"
    config: dict[str, Any] = {"http": {"trusted_proxies": ["10.0.0.0/8", entry]}}
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError) as caught:
        load_settings(str(path), env={})
    assert caught.value.key.startswith("http.trusted_proxies"), str(caught.value)
    assert "CIDR" in caught.value.reason
