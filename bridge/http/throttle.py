"""Counting failures per key (a client address, an account name) and saying when to stop
listening for a while; and a log line that speaks at most once per interval.

Both live in one process: with several replicas each keeps its own counts (an attacker
spread over N replicas gets N times the budget, which is still a budget).
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

MAX_TRACKED_KEYS = 10_000


class FailureThrottle:
    """At most `max_failures` failures per key in `window_s`; `blocked(key)` says when the
    budget is spent. Memory stays bounded: with too many keys the stale ones go first."""

    def __init__(self, max_failures: int, window_s: float, *, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = MAX_TRACKED_KEYS) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self.max_keys = max_keys
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def blocked(self, key: str) -> bool:
        failures = self._failures.get(key)
        if failures is None:
            return False
        cutoff = self._clock() - self.window_s
        while failures and failures[0] < cutoff:
            failures.popleft()
        if not failures:
            del self._failures[key]
            return False
        return len(failures) >= self.max_failures

    def retry_after(self, key: str) -> int:
        """Seconds until the oldest counted failure of `key` leaves the window."""
        failures = self._failures.get(key)
        if not failures:
            return 0
        return max(1, int(failures[0] + self.window_s - self._clock()) + 1)

    def fail(self, key: str) -> None:
        if key not in self._failures and len(self._failures) >= self.max_keys:
            self._forget_stale()
        self._failures.setdefault(key, deque(maxlen=self.max_failures + 1)).append(self._clock())

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    def _forget_stale(self) -> None:
        cutoff = self._clock() - self.window_s
        for key in [k for k, f in self._failures.items() if not f or f[-1] < cutoff]:
            del self._failures[key]
        if len(self._failures) >= self.max_keys:  # all fresh: a flood of addresses; start over
            self._failures.clear()


@functools.lru_cache(maxsize=4096)  # parsed once per address, not once per request
def client_key(address: str | None) -> str:
    """The throttling key for a client address: IPv6 clients by their /64 (one host
    usually owns the whole /64, and could otherwise rotate through it)."""
    if not address:
        return "-"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is None:
        return str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64)))
    return str(ip.ipv4_mapped or ip) if isinstance(ip, ipaddress.IPv6Address) else str(ip)


class Occasional:
    """A warning that is logged at most once per `interval_s`, with the count of the ones
    held back in between (a flood of refused connections must not flood the log)."""

    def __init__(self, logger: logging.Logger, interval_s: float = 10.0, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.interval_s = interval_s
        self._clock = clock
        self._last = float("-inf")
        self._held = 0

    def warning(self, message: str, *args: Any) -> bool:
        now = self._clock()
        if now - self._last < self.interval_s:
            self._held += 1
            return False
        held, self._held, self._last = self._held, 0, now
        suffix = f" ({held} more like it since the last report)" if held else ""
        self.logger.warning(message + suffix, *args)
        return True
