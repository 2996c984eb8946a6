"""Where the daemon is, how its replies are read, and how long a restart is ridden out."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from hitl_bridge_client._version import __version__
from hitl_bridge_client.calls import Call
from hitl_bridge_client.errors import BridgeError, BridgeUnavailable, NotABridge, refusal

URL_ENV = "HITL_BRIDGE_URL"
TOKEN_ENV = "HITL_BRIDGE_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8787"
RETRY_S = (0.2, 0.5, 1.0, 2.0, 5.0)  # backoff while the daemon does not answer
CREATE_GIVE_UP_S = 5.0  # a request that could not even be created fails fast: nothing waits on it yet
log = logging.getLogger("hitl_bridge_client")
VERSION = __version__


class Restarting(httpx.TransportError):
    """A proxy in front of a restarting daemon (502/503/504): try again like a lost connection."""


# the call never reached the daemon: safe to send again whatever it was
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class Endpoint:
    """The daemon's base URL and the headers every call carries."""

    base_url: str
    headers: dict[str, str] = field(default_factory=dict)
    unavailable_after: float = 300.0
    #: creating a request: give up sooner (nothing waits on it yet); at most `unavailable_after`
    create_unavailable_after: float = CREATE_GIVE_UP_S

    @classmethod
    def resolve(cls, base_url: str | None, token: str | None, unavailable_after: float,
                create_unavailable_after: float = CREATE_GIVE_UP_S) -> Endpoint:
        """Arguments first, then HITL_BRIDGE_URL / HITL_BRIDGE_TOKEN, then the local daemon."""
        url = (base_url or os.environ.get(URL_ENV) or DEFAULT_URL).rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"the bridge URL must start with http:// or https://, got {url!r}")
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        headers = {"User-Agent": f"hitl-bridge-client/{VERSION}"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return cls(url, headers, unavailable_after, create_unavailable_after)

    def __repr__(self) -> str:  # never show the token
        return f"Endpoint({self.base_url!r}, unavailable_after={self.unavailable_after})"


def result(response: httpx.Response) -> Any:
    """The JSON of a reply; a typed BridgeRefused for 4xx/5xx; Restarting for a proxy's 502-504."""
    if response.status_code in (502, 503, 504):
        raise Restarting(f"HTTP {response.status_code}")
    if response.status_code >= 400:
        content_type = response.headers.get("content-type", "").split(";")[0].strip() or "no content type"
        try:
            detail = str(response.json().get("detail"))
        except (ValueError, AttributeError):
            if "json" not in content_type:  # an HTML error page or the like: not the API
                raise NotABridge(str(response.request.url.copy_with(query=None)), response.status_code,
                                 content_type) from None
            detail = response.text[:500]
        raise refusal(response.status_code, detail)
    try:
        return response.json()
    except ValueError:
        raise BridgeError(f"the bridge answered HTTP {response.status_code} without JSON: "
                          f"{response.text[:200]!r}") from None


class Retry:
    """The waits between attempts of one call while the daemon does not answer."""

    def __init__(self, endpoint: Endpoint, call: Call) -> None:
        self.endpoint = endpoint
        self.call = call
        self.started = time.monotonic()
        self.attempt = 0

    def delay(self, exc: httpx.TransportError) -> float:
        """How long to wait before sending again; raises when it must not be sent again."""
        base = self.endpoint.base_url
        where = f"{self.call.method} {base}{self.call.path}"
        if not self.call.resend and not isinstance(exc, (*NOT_SENT, Restarting)):
            raise BridgeUnavailable(f"{where}: the connection broke after sending ({type(exc).__name__}); "
                                    "it may have been applied: look with get()") from exc
        give_up = min(self.endpoint.unavailable_after, self.endpoint.create_unavailable_after) \
            if self.call.creates else self.endpoint.unavailable_after
        elapsed = time.monotonic() - self.started
        if elapsed > give_up:
            if self.call.creates:
                raise BridgeUnavailable(
                    f"could not create the request: no hitl-bridge daemon answers at {base} "
                    f"({type(exc).__name__}: {exc}); start one (hitl-bridge serve) or set {URL_ENV} "
                    "to where it runs") from exc
            raise BridgeUnavailable(f"{where}: no answer for {self.endpoint.unavailable_after:.0f} s: "
                                    f"{type(exc).__name__}: {exc}") from exc
        if self.attempt == 0:  # say so at once, not after minutes of silence
            log.warning("hitl-bridge-client: no hitl-bridge daemon answers at %s yet (%s); %s", base,
                        type(exc).__name__, f"trying again for {give_up:.0f} s (is it running? {URL_ENV} "
                        "says where it is)")
        self.attempt += 1
        return min(RETRY_S[min(self.attempt - 1, len(RETRY_S) - 1)], max(0.05, give_up - elapsed + 0.05))
