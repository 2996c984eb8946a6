"""Calling Slack reliably: retries with backoff, `Retry-After` honoured, posts paced per channel.

slack_sdk's own `AsyncRateLimitErrorRetryHandler` already waits out most 429s inside one
call; what gets through (and 5xx, timeouts, dropped connections) is retried here. Errors
Slack means for good (`channel_not_found`, `invalid_blocks`, `invalid_auth`…) are not.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError

log = logging.getLogger("hitl_bridge.slack")

T = TypeVar("T")
RETRYABLE_ERRORS = frozenset({"ratelimited", "fatal_error", "internal_error", "service_unavailable",
                              "request_timeout"})
MAX_RATE_LIMIT_WAITS = 100
MAX_BACKOFF_S = 30.0


class SlackCallFailed(Exception):
    """A Slack call failed for good; `error` is Slack's error code or the exception's name."""

    def __init__(self, what: str, error: str, *, code: str | None = None, network: bool = False) -> None:
        super().__init__(f"{what} failed: {error}")
        self.error = error
        self.code = code or error  # Slack's error code alone (`error` may say how many attempts)
        self.network = network  # Slack was not reached (timeouts, refused connections)


def slack_error(exc: SlackApiError) -> str:
    data = exc.response.data if exc.response is not None else None
    if isinstance(data, dict) and data.get("error"):
        return str(data["error"])
    status = exc.response.status_code if exc.response is not None else "?"
    return f"http_{status}"


def _retry_after(exc: SlackApiError) -> float | None:
    """Seconds Slack asks us to wait, or None when this is not a rate limit."""
    response = exc.response
    if response is None or response.status_code != 429:
        return None
    headers = {str(k).lower(): v for k, v in (response.headers or {}).items()}
    raw = headers.get("retry-after")
    if isinstance(raw, list):
        raw = raw[0] if raw else None
    try:
        return max(float(raw), 0.0) if raw is not None else 1.0
    except (TypeError, ValueError):
        return 1.0


class CallObserver(Protocol):
    """Told how each call ended: Slack's error code, or None when it succeeded."""

    def __call__(self, error: str | None, *, network: bool = False) -> None: ...


class Retrier:
    """Runs one Slack call until it succeeds, fails for good, or runs out of attempts."""

    def __init__(self, *, max_attempts: int, backoff_s: float, observer: CallObserver | None = None) -> None:
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.observer = observer

    async def call(
        self,
        what: str,
        attempt: Callable[[], Awaitable[T]],
        *,
        recover: Callable[[], Awaitable[T | None]] | None = None,
    ) -> T:
        """Return `attempt()`'s result (see `_call`); the observer hears how it ended."""
        try:
            result = await self._call(what, attempt, recover=recover)
        except SlackCallFailed as exc:
            if self.observer is not None:
                self.observer(exc.code, network=exc.network)
            raise
        if self.observer is not None:
            self.observer(None)
        return result

    async def _call(
        self,
        what: str,
        attempt: Callable[[], Awaitable[T]],
        *,
        recover: Callable[[], Awaitable[T | None]] | None = None,
    ) -> T:
        """Return `attempt()`'s result. After an ambiguous failure (5xx, timeout) and before
        trying again, `recover()` may find that the first try did land (then it wins)."""
        failures = 0
        waits = 0
        network = False
        while True:
            try:
                return await attempt()
            except SlackApiError as exc:
                pause = _retry_after(exc)
                error = slack_error(exc)
                if pause is not None and waits < MAX_RATE_LIMIT_WAITS:
                    waits += 1
                    log.info("%s rate limited; waiting %.1fs", what, pause)
                    await asyncio.sleep(pause)
                    continue
                status = exc.response.status_code if exc.response is not None else 0
                if status < 500 and error not in RETRYABLE_ERRORS:
                    raise SlackCallFailed(what, error) from None
                network = False
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                error = type(exc).__name__
                network = True
            failures += 1
            if failures >= self.max_attempts:
                raise SlackCallFailed(what, f"{error} (after {failures} attempts)", code=error, network=network)
            delay = min(self.backoff_s * 2 ** (failures - 1), MAX_BACKOFF_S)
            log.warning("%s failed (%s); retry %d in %.1fs", what, error, failures, delay)
            await asyncio.sleep(delay)
            if recover is not None:
                found = await recover()
                if found is not None:
                    return found


class ChannelPacer:
    """Serialises posts per Slack channel, in arrival order, at most one per `interval_s`.

    The gap is measured from when a post completed, so Slack (which counts by arrival)
    never sees two posts to one channel closer than `interval_s`.
    """

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._locks: dict[str, asyncio.Lock] = {}
        self._last: dict[str, float] = {}

    async def run(self, channel: str, job: Callable[[], Awaitable[T]]) -> T:
        lock = self._locks.setdefault(channel, asyncio.Lock())
        async with lock:  # asyncio.Lock wakes waiters first come, first served
            last = self._last.get(channel)
            if last is not None:
                gap = last + self.interval_s - time.monotonic()
                if gap > 0:
                    await asyncio.sleep(gap)
            try:
                return await job()
            finally:
                self._last[channel] = time.monotonic()


def response_data(response: Any) -> dict[str, Any]:
    """The JSON body of an AsyncSlackResponse as a plain dict."""
    data = getattr(response, "data", response)
    return dict(data) if isinstance(data, dict) else {}
