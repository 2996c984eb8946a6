"""The HTTP under the SDK's client for a Streamable HTTP server: httpx2's transport
interface (what `mcp`'s `streamable_http_client` takes) over aiohttp's client: a call
through the SDK's client on it took about half the CPU of one on httpx2's own pool
(measured on its own; every rule-allowed call to an HTTP server goes through it).

Keep-alive: the SDK's client closes each call's event stream as soon as the call's result
arrives, a moment before the server ends it, and a response closed before its end costs
its connection (a new TCP connection for every call, on both sides). This transport reads
such a response to its end first when the end is that near (`DRAIN_WITHIN_S`,
`DRAIN_AT_MOST` bytes), so the connection goes back to the pool; a stream that does not end
by then (a server's long-lived listening stream) is closed as before. The result has
reached the caller already: the drain delays nothing.

aiohttp's failures are raised as httpx2's (connect, read, timeout), which is what the SDK
handles; bodies are passed on still encoded (httpx2 decodes them, as with its own pool);
proxies come from `HTTP_PROXY` / `HTTPS_PROXY` / `NO_PROXY`, as with httpx2; no cookies
are kept (each request says who it is with the server's `headers`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import NoReturn

import aiohttp
import anyio
import httpx2
from yarl import URL

DRAIN_WITHIN_S = 0.25
DRAIN_AT_MOST = 64 * 1024
NOT_PASSED = frozenset({"host", "content-length", "transfer-encoding"})  # aiohttp writes its own


class KeepAlive(httpx2.AsyncBaseTransport):
    """One pool of connections (aiohttp's), for one downstream server's client."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    def _pool(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                # proxies from HTTP(S)_PROXY / NO_PROXY, as httpx2 honours them
                auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(), trust_env=True,
                timeout=aiohttp.ClientTimeout(total=None))
        return self._session

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        timeouts = request.extensions.get("timeout", {})
        timeout = aiohttp.ClientTimeout(total=None, connect=timeouts.get("connect"),
                                        sock_read=timeouts.get("read"))
        headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() not in NOT_PASSED]
        body = await request.aread()
        try:
            response = await self._pool().request(
                request.method, URL(str(request.url), encoded=True), headers=headers, data=body or None,
                allow_redirects=False, timeout=timeout)
        except Exception as exc:
            _raise_as_httpx(exc, request, connecting=True)
        return httpx2.Response(response.status, headers=list(response.raw_headers), stream=Body(response, request),
                               extensions={"http_version": b"HTTP/1.1"})

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class Body(httpx2.AsyncByteStream):
    """A response body whose close reads what is left of it (briefly) before letting go."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx2.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except Exception as exc:
            _raise_as_httpx(exc, self._request)

    async def aclose(self) -> None:
        content = self._response.content
        left = DRAIN_AT_MOST
        try:
            with anyio.move_on_after(DRAIN_WITHIN_S):
                while left >= 0 and not content.at_eof():
                    chunk = await content.readany()
                    if not chunk:
                        break
                    left -= len(chunk)
        except (aiohttp.ClientError, TimeoutError, OSError):
            pass  # the connection broke: releasing lets it go
        finally:  # cancelled too: back to the pool when read to its end, else closed
            self._response.release()


def _raise_as_httpx(exc: Exception, request: httpx2.Request, connecting: bool = False) -> NoReturn:
    """Raise aiohttp's failure as the httpx2 error the SDK's client expects (others as they are)."""
    message = str(exc) or type(exc).__name__
    mapped: Exception | None = None
    if isinstance(exc, aiohttp.ClientConnectorError):
        mapped = httpx2.ConnectError(message, request=request)
    elif isinstance(exc, TimeoutError | aiohttp.ServerTimeoutError):
        if connecting and isinstance(exc, aiohttp.ConnectionTimeoutError):
            mapped = httpx2.ConnectTimeout(message, request=request)
        else:
            mapped = httpx2.ReadTimeout(message, request=request)
    elif isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError):
        mapped = httpx2.RemoteProtocolError(message, request=request)
    elif isinstance(exc, aiohttp.ClientError | OSError):
        mapped = httpx2.ReadError(message, request=request)
    if mapped is None:
        raise exc
    raise mapped from exc
