"""Which `Host` names the bridge answers to (the defence against DNS rebinding).

A web page cannot read or drive a daemon on 127.0.0.1 directly (the browser keeps origins
apart), but it can point its own name at 127.0.0.1 ("DNS rebinding") and then talk to the
daemon as `Host: attacker.example`. Answering only the names the bridge is really reached
by closes that door: the listen address, the loopback names, and the hosts of the public
URLs in the config (where Slack, Telegram and people's browsers come from).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from bridge.config import Settings
from bridge.specs import channel_specs

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_LISTEN = ("0.0.0.0", "::", "")
ANY = "*"


def host_of_url(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def default_allowed_hosts(settings: Settings) -> list[str]:
    """The listen address (unless it is a wildcard), the loopback names, `http.public_url`'s
    host and the hosts of the public URLs channel sections name (a chat app's webhook URL)."""
    http = settings.http
    names = list(LOOPBACK_NAMES)
    if http.host not in WILDCARD_LISTEN:
        names.append(http.host)
    urls: list[str | None] = [http.public_url]
    for spec in channel_specs():
        section = settings.section(spec.name)
        urls += spec.public_urls(section) if isinstance(section, dict) else []
    for url in urls:
        host = host_of_url(url)
        if host:
            names.append(host)
    return _unique(names)


def allowed_hosts(settings: Settings) -> list[str]:
    configured = settings.http.allowed_hosts
    return _unique(configured) if configured is not None else default_allowed_hosts(settings)


def hostname_of_header(value: str) -> str | None:
    """`example.com:8787` → `example.com`; `[::1]:8787` → `::1`; None when unreadable."""
    value = value.strip().lower()
    if not value or len(value) > 300:
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or (end + 1 < len(value) and not value[end + 1:].startswith(":")):
            return None
        host = value[1:end]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
        return host
    host, _, port = value.partition(":")
    if port and not port.isdigit():
        return None
    host = host.rstrip(".")  # `localhost.` is `localhost`
    if not host or any(c in host for c in "/\\@ \t?#"):
        return None
    return host


class HostPolicy:
    """Matches a request's Host header against the allowed names: exact names (any port),
    `*.example.com` for subdomains, or `*` for any host."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = [n.strip().lower().strip("[]").rstrip(".") for n in names if n.strip()]
        self.any = ANY in self.names
        self._exact = {n for n in self.names if not n.startswith("*.")}
        self._suffixes = tuple(n[1:] for n in self.names if n.startswith("*."))

    def allows(self, header: str | None) -> bool:
        if self.any:
            return True
        if header is None:
            return True  # HTTP/1.0 without Host: not a browser (browsers always send one)
        host = hostname_of_header(header)
        if host is None:
            return False
        return host in self._exact or (bool(self._suffixes) and host.endswith(self._suffixes))

    def describe(self) -> str:
        return ", ".join(self.names) if self.names else "(none)"


def _unique(names: Iterable[str]) -> list[str]:
    out: list[str] = []
    for name in names:
        name = name.strip().lower().strip("[]")
        if name and name not in out:
            out.append(name)
    return out
