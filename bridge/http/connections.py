"""Connections that cannot starve the daemon: a whole request must arrive within
`http.read_timeout`, at most `http.max_connections` are open (kept below the open-file
limit, so `accept()` never runs out of descriptors), and when the limit is reached the
oldest connection that is not being answered (one still sending its headers first, else
one idle or still sending its body) makes room for the new one. A flood of half-sent or
slowloris connections therefore costs the attacker sockets, not the daemon its probes and
answers.

uvicorn has no read timeout for a request and counts its concurrency limit only once a
request is complete, so this is its httptools protocol with those two things added.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from bridge.http.throttle import Occasional

log = logging.getLogger("hitl_bridge.http")

#: descriptors kept for everything else (the store, outgoing calls, watched files, logs)
RESERVED_FDS = 64
DEFAULT_CEILING = 4096
REQUEST_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 36\r\n"
        b"connection: close\r\nretry-after: 1\r\n\r\ntoo many connections; try again soon")


def open_file_limit() -> int:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def listen_backlog(fd_limit: int | None = None) -> int:
    """The listen queue. asyncio accepts up to this many connections in one go before any of
    them is admitted or refused, so it is also the burst of descriptors kept spare."""
    fds = fd_limit if fd_limit is not None else open_file_limit()
    return max(16, min(128, fds // 8))


def connection_limit(configured: int | None, fd_limit: int | None = None) -> int:
    """`configured`, or three quarters of the open-file limit (at most 4096); never so
    many that one burst of accepts could leave the daemon without a descriptor."""
    fds = fd_limit if fd_limit is not None else open_file_limit()
    ceiling = max(4, fds - RESERVED_FDS - listen_backlog(fds))
    if configured is None:
        return max(4, min(DEFAULT_CEILING, fds * 3 // 4, ceiling))
    wanted = configured
    if wanted > ceiling:
        log.warning("http.max_connections %d is more than the open-file limit (%d) leaves room for; using %d "
                    "(raise `ulimit -n` for more)", wanted, fds, ceiling)
    return max(4, min(wanted, ceiling))


class ConnectionGuard:
    """Shared by the connections of one server: who is open, since when, and what to close."""

    def __init__(self, max_connections: int, read_timeout_s: float) -> None:
        self.max_connections = max_connections
        self.read_timeout_s = read_timeout_s
        self.open: dict[GuardedProtocol, float] = {}  # in the order they connected
        self.evicted = 0
        self.refused = 0
        self.timed_out = 0
        self._full_log = Occasional(log)

    def admit(self, connection: GuardedProtocol) -> bool:
        if len(self.open) >= self.max_connections:
            # first a connection that has not even sent its headers, else any that is not answered
            victim = next((c for c in self.open if c.waiting_for_headers), None) or \
                next((c for c in self.open if not c.answering), None)
            if victim is None:
                self.refused += 1
                self._full_log.warning("refused a connection: all %d connections are being answered "
                                       "(http.max_connections)", self.max_connections)
                return False
            self.evicted += 1
            self._full_log.warning("connection limit reached (%d, http.max_connections): closed the oldest "
                                   "connection that was still sending or idle", self.max_connections)
            self.release(victim)
            victim.close()
        self.open[connection] = time.monotonic()
        return True

    def release(self, connection: GuardedProtocol) -> None:
        self.open.pop(connection, None)


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a request read deadline and the shared limit."""

    guard: ConnectionGuard  # set on the subclass `protocol_class` makes

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_deadline: asyncio.TimerHandle | None = None
        self._reading = False

    @property
    def waiting_for_headers(self) -> bool:
        return self._reading and (self.cycle is None or self.cycle.response_complete)

    @property
    def answering(self) -> bool:
        """A whole request arrived and the app is working on it: never evicted."""
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete and not cycle.more_body and not self._reading

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.guard.admit(self):
            transport.write(BUSY)
            transport.close()
            return
        self._start_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.release(self)
        self._stop_reading()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self._reading:  # the next request on a kept-alive connection
            self._start_reading()

    def on_message_complete(self) -> None:
        self._stop_reading()
        super().on_message_complete()

    def close(self) -> None:
        self._stop_reading()
        if not self.transport.is_closing():
            self.transport.close()

    def _start_reading(self) -> None:
        self._reading = True
        self._read_deadline = self.loop.call_later(self.guard.read_timeout_s, self._read_timed_out)

    def _stop_reading(self) -> None:
        self._reading = False
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _read_timed_out(self) -> None:
        self._read_deadline = None
        if not self._reading or self.transport.is_closing():
            return
        self.guard.timed_out += 1
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(REQUEST_TIMEOUT)  # nothing of this request was answered yet
        self.close()


def protocol_class(guard: ConnectionGuard) -> type[GuardedProtocol]:
    """A protocol class bound to `guard`, for `uvicorn.Config(http=...)`."""
    return type("BridgeHttpProtocol", (GuardedProtocol,), {"guard": guard})


class AcceptErrorFilter(logging.Filter):
    """asyncio logs a traceback for every failed `accept()` when descriptors run out (and
    for every retry it scheduled): let one through per second, with the count held back."""

    MARKERS = ("socket.accept() out of system resource", "_accept_connection", "_start_serving")

    def __init__(self, interval_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._clock = clock
        self._last = float("-inf")
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        if not any(marker in message for marker in self.MARKERS):
            return True
        now = self._clock()
        if now - self._last < self.interval_s:
            self._held += 1
            return False
        if self._held:
            record.msg = f"{message}\n({self._held} more accept errors held back)"
        self._last, self._held = now, 0
        return True


def quiet_accept_errors() -> None:
    """Install `AcceptErrorFilter` on asyncio's logger once."""
    logger = logging.getLogger("asyncio")
    if not any(isinstance(f, AcceptErrorFilter) for f in logger.filters):
        logger.addFilter(AcceptErrorFilter())
