"""Where the running daemon is and how to talk to it: one function for every verb (and the
MCP server) that reads `--url` / `--token`, HITL_BRIDGE_URL / HITL_BRIDGE_TOKEN, then the
config's `http.listen`; every call goes through `hitl_bridge_client`.

    address = daemon_address(url, token, config=path)      # flags first, then env, then config
    with connect(address) as client: client.list("posted")

The config's first API token is sent only to the config's own address: a token meant for
this machine's daemon never goes to a URL typed on the command line or set in the env.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hitl_bridge_client.transport import TOKEN_ENV, URL_ENV

from bridge.cli.exits import UNAUTHORIZED, UNREACHABLE, USAGE, Failed

if TYPE_CHECKING:
    from hitl_bridge_client import BridgeError, Client

    from bridge.config import Settings


@dataclass(frozen=True)
class DaemonAddress:
    """The daemon's base URL, the bearer token to send (None: none) and where the URL came from."""

    url: str
    token: str | None
    origin: str  # "--url", "HITL_BRIDGE_URL", "http.listen in FILE", the default

    def __repr__(self) -> str:  # never show the token
        return f"DaemonAddress({self.url!r}, token={'set' if self.token else 'none'}, origin={self.origin!r})"


def listen_url(settings: Settings) -> str:
    """The URL of the daemon that `settings` describe, as seen from this machine."""
    host = settings.http.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.http.port}"


def daemon_address(url: str | None = None, token: str | None = None, *, config: str | None = None,
                   env: Mapping[str, str] | None = None) -> DaemonAddress:
    """`url`/`token` (the flags) first, then HITL_BRIDGE_URL / HITL_BRIDGE_TOKEN, then the
    config (`config`, $HITL_BRIDGE_CONFIG, ./hitl-bridge.yaml, embedded defaults): its
    `http.listen` and first API token. Raises ConfigError for a config that does not load,
    Failed(USAGE) for a URL that is not http(s)."""
    env = os.environ if env is None else env
    token = token or env.get(TOKEN_ENV) or None
    if url:
        origin = "--url"
    elif env.get(URL_ENV):
        url, origin = env[URL_ENV], URL_ENV
    else:
        from bridge.config import EMBEDDED, load_settings

        settings = load_settings(config, dict(env))
        url = listen_url(settings)
        origin = "the default address" if settings.origin == EMBEDDED else f"http.listen in {settings.origin}"
        token = token or settings.http.first_token
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise Failed(f"the daemon's URL must start with http:// or https://, got {url!r} (from {origin})", USAGE)
    return DaemonAddress(url, token, origin)


def connect(address: DaemonAddress) -> Client:
    """A client of the daemon at `address` that does not wait for a daemon that is down:
    the first refused connection is reported (exit 3)."""
    from hitl_bridge_client import Client

    return Client(address.url, token=address.token or "", unavailable_after=0)


def failure(exc: BridgeError, address: DaemonAddress) -> Failed:
    """The one-line message and exit code for an error the client raised."""
    from hitl_bridge_client import BridgeRefused, BridgeUnavailable, NotABridge, NotFound, Unauthorized

    if isinstance(exc, NotABridge):  # an HTML page where the API should be: one line, not the page
        return Failed(f"{address.url}: this is not a hitl-bridge daemon (got {exc.status} {exc.content_type})",
                      UNREACHABLE)
    if isinstance(exc, Unauthorized) and exc.status == 401:
        how = "the token was refused" if address.token else "it wants a token"
        return Failed(f"the daemon at {address.url} answered 401: {how}. Pass --token or set {TOKEN_ENV} "
                      "(one of its http.api_tokens).", UNAUTHORIZED)
    if isinstance(exc, NotFound) and exc.detail == "Not Found":  # no such route: not the API's base URL
        return Failed(f"{address.url} answers, but not like a hitl-bridge daemon (HTTP 404 Not Found): give "
                      "its base URL, e.g. http://host:8787", UNREACHABLE)
    if isinstance(exc, NotFound):
        return Failed(exc.detail)
    if isinstance(exc, BridgeRefused):
        return Failed(exc.detail if exc.status == 409 else f"refused: {exc.detail}")
    if isinstance(exc, BridgeUnavailable):
        return unreachable(address, exc)
    return Failed(f"{address.url} answers, but not like a hitl-bridge daemon: {exc}", UNREACHABLE)


def unreachable(address: DaemonAddress, exc: Exception) -> Failed:
    if "broke after sending" in str(exc):  # an answer or a cancel may have been applied
        return Failed(f"the connection to {address.url} broke after sending: it may have been applied; "
                      "look with `hitl-bridge show ID`", UNREACHABLE)
    cause = exc.__cause__ or exc
    why = re.sub(r"^\[Errno -?\d+\]\s*", "", str(cause)) or type(cause).__name__
    if address.origin == "--url":
        hint = "Check the URL"
    else:
        hint = "Start one with `hitl-bridge serve`, or point --url or HITL_BRIDGE_URL at yours"
    return Failed(f"no hitl-bridge daemon answers at {address.url} ({address.origin}): {why}. {hint}; "
                  "--offline reads the store directly.", UNREACHABLE)
