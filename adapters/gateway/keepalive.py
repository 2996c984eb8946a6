"""Keep-alive for a Streamable HTTP server's connection: the official client closes each
call's event stream as soon as the call's result arrives, a moment before the server ends
it, and a response closed before its end costs its connection (a new TCP connection for
every call, for both sides). This transport reads such a response to its end first when
the end is that near (`DRAIN_WITHIN_S`, `DRAIN_AT_MOST` bytes), so the connection goes back
to the pool; a stream that does not end by then (a server's long-lived listening stream)
is closed as before. The result has reached the caller already: the drain delays nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx2

DRAIN_WITHIN_S = 0.25
DRAIN_AT_MOST = 64 * 1024


class KeepAlive(httpx2.AsyncBaseTransport):
    """`inner` (the pool), with every response's close drained first."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = Drained(response.stream)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class Drained(httpx2.AsyncByteStream):
    """A response body whose close reads what is left of it (briefly) before closing."""

    def __init__(self, stream: httpx2.AsyncByteStream) -> None:
        self._stream = stream
        self._chunks = stream.__aiter__()  # one iterator, shared by the reader and the drain

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        left = DRAIN_AT_MOST
        with anyio.move_on_after(DRAIN_WITHIN_S):
            try:
                async for chunk in self._chunks:
                    left -= len(chunk)
                    if left < 0:
                        break
            except httpx2.TransportError:
                pass  # the connection broke: closing below lets it go
        await self._stream.aclose()
