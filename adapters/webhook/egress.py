"""Where callbacks may go: never, by default, to the inside (SSRF).

Whoever can create a request chooses its callback URL, and the bridge POSTs there from its
own network position. So loopback, private, link-local, multicast and other non-public
addresses are refused, unless the bridge listens on loopback only (then everyone who can
ask could reach those addresses anyway) or the operator opts in (`http.callback_allow`
naming the host, or `http.callback_allow_private: true`).

The check runs on the address actually connected to: `GuardedBackend` is an httpcore
network backend that resolves the name itself, checks every address, and connects to the
one it checked, so neither a numeric spelling (`127.1`, `2130706433`, `[::ffff:7f00:1]`)
nor a DNS answer that changes between check and connect gets past it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import typing
from collections.abc import Awaitable, Callable, Iterable, Sequence
from fnmatch import fnmatchcase

import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int, "float | None"], Awaitable[list[IPAddress]]]
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
OPT_IN = ("name the host in http.callback_allow, or set http.callback_allow_private: true, "
          "if the bridge should call inside addresses")


class CallbackRefused(Exception):
    """The callback target is not allowed; never retried, never contacted."""


def inside_kind(ip: IPAddress) -> str | None:
    """What kind of non-public address `ip` is ("a loopback address"...), None when public."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (
            ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in NAT64 else None)
        if embedded is not None:
            return inside_kind(embedded)
    checks = (("is_unspecified", "an unspecified address"), ("is_loopback", "a loopback address"),
              ("is_link_local", "a link-local address"), ("is_multicast", "a multicast address"),
              ("is_private", "a private address"), ("is_reserved", "a reserved address"))
    for attribute, kind in checks:
        if getattr(ip, attribute):
            return kind
    return None if ip.is_global else "a non-public address"


def literal_address(host: str) -> IPAddress | None:
    """The address a host names without DNS: dotted, IPv6 and the old numeric spellings
    that resolvers accept (`127.1`, `0x7f.1`, `2130706433`)."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


class CallbackPolicy:
    def __init__(self, allow: Sequence[str], *, allow_private: bool) -> None:
        self.allow = [p.lower() for p in allow]
        self.allow_private = allow_private

    def host_listed(self, host: str) -> bool:
        return any(fnmatchcase(host.lower(), pattern) for pattern in self.allow)

    def _inside_allowed(self, host: str) -> bool:
        """A host the operator named (not just `*`) may be an inside one."""
        return self.allow_private or any(p != "*" and fnmatchcase(host.lower(), p) for p in self.allow)

    def refusal(self, url: str) -> str | None:
        """Why a callback URL is refused before any DNS (at intake, and before a delivery)."""
        try:
            host = httpx.URL(url).host
        except (httpx.InvalidURL, ValueError) as exc:
            return f"not a usable URL ({exc})"
        if not host:
            return "the URL has no host"
        if self.allow and not self.host_listed(host):
            return "host not allowed by http.callback_allow"
        ip = literal_address(host)
        kind = inside_kind(ip) if ip is not None else None
        if kind and not self._inside_allowed(host):
            return f"the host is {kind}; {OPT_IN}"
        return None

    def check_resolved(self, host: str, addresses: Iterable[IPAddress]) -> None:
        """Raise CallbackRefused when `host` is not listed or resolved to an inside address."""
        if self.allow and not self.host_listed(host):
            raise CallbackRefused("host not allowed by http.callback_allow")
        if self._inside_allowed(host):
            return
        for ip in addresses:
            kind = inside_kind(ip)
            if kind:
                raise CallbackRefused(f"the host resolves to {kind}; {OPT_IN}")


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolve, check every address, connect to a checked one (pinned: no second lookup)."""

    def __init__(self, policy: CallbackPolicy, resolve: Resolver | None = None) -> None:
        self.policy = policy
        self.resolve = resolve or resolve_host
        self.inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,  # noqa: ASYNC109 (httpcore's)
                          local_address: str | None = None,
                          socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
                          ) -> httpcore.AsyncNetworkStream:
        addresses = await self.resolve(host, port, timeout)
        self.policy.check_resolved(host, addresses)
        last: Exception | None = None
        for ip in addresses:
            try:
                return await self.inner.connect_tcp(str(ip), port, timeout=timeout, local_address=local_address,
                                                    socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        raise last or httpcore.ConnectError(f"no address for {host}")

    async def connect_unix_socket(self, path: str, timeout: float | None = None,  # noqa: ASYNC109
                                  socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
                                  ) -> httpcore.AsyncNetworkStream:
        raise CallbackRefused("callbacks go over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


async def resolve_host(host: str, port: int, within_s: float | None) -> list[IPAddress]:
    """Every address `host` resolves to (a literal without DNS)."""
    ip = literal_address(host)
    if ip is not None:
        return [ip]
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), within_s)
    except TimeoutError:
        raise httpcore.ConnectTimeout(f"resolving {host} timed out") from None
    except OSError as exc:
        raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from None
    out: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in out:
            out.append(address)
    if not out:
        raise httpcore.ConnectError(f"cannot resolve {host}: no address")
    return out


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport over a `GuardedBackend`; no proxies from the environment (a
    proxy would make the connect-time check look at the proxy, not the target)."""

    def __init__(self, policy: CallbackPolicy, resolve: Resolver | None = None) -> None:
        super().__init__(trust_env=False)
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy, resolve),
        )
