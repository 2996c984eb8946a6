"""Staying within Telegram's limits and keeping tokens out of logs.

`FloodLimiter` is PTB's `AIORateLimiter` (overall and per-group limits, RetryAfter
honoured and retried) plus a per-private-chat limit of one message per `per_chat_interval`.
`with_retries` retries network errors (not bad requests) with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from telegram.error import BadRequest, NetworkError
from telegram.ext import AIORateLimiter

log = logging.getLogger(__name__)
T = TypeVar("T")


class _ChatGate:
    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.last = float("-inf")


class SlidingWindow:
    """At most `limit` calls within any `period` seconds, each counted from when it
    completed less `slack` (never before it started): the server sees a call before it
    completes, so unless its clock is off by more than `slack` it never counts more than
    `limit` in a period, however the network or the event loop delays calls. Starts are
    also paced `period / limit` apart on a fixed schedule, so calls do not bunch up."""

    def __init__(self, limit: int, period: float = 1.0, slack: float = 0.02) -> None:
        self.limit = limit
        self.period = period
        self.slack = slack
        self._gap = period / limit
        self._next = float("-inf")
        self._done: deque[float] = deque()
        self._in_flight = 0
        self._changed = asyncio.Condition()
        self._turn = asyncio.Lock()

    async def _acquire(self) -> float:
        loop = asyncio.get_running_loop()
        async with self._turn, self._changed:  # one waiter at a time, in order: no thundering herd
            while True:
                now = loop.time()
                while self._done and now - self._done[0] >= self.period:
                    self._done.popleft()
                full = len(self._done) + self._in_flight >= self.limit
                if not full and now >= self._next:
                    self._in_flight += 1
                    self._next = max(self._next, now - self._gap) + self._gap
                    return now
                wait = (self.period - (now - self._done[0]) if self._done else None) if full else self._next - now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), wait)

    async def _release(self, started: float) -> None:
        async with self._changed:
            self._in_flight -= 1
            self._done.append(max(started, asyncio.get_running_loop().time() - self.slack))
            self._changed.notify_all()

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one place in the window for the duration of a call."""
        started = await self._acquire()
        try:
            yield
        finally:
            await self._release(started)


class FloodLimiter(AIORateLimiter):
    """PTB's AIORateLimiter (20/min per group, RetryAfter honoured and retried), with the
    overall limit as a paced sliding window of `max_per_second` calls naming a chat, and one
    `send*` per `per_chat_interval` per private chat, counted from the end of the previous
    send so that network jitter cannot squeeze two into one interval."""

    def __init__(self, max_per_second: int, per_chat_interval: float, max_retries: int) -> None:
        super().__init__(overall_max_rate=0, max_retries=max_retries)
        self._overall = SlidingWindow(max_per_second)
        self._interval = per_chat_interval
        self._chats: dict[int, _ChatGate] = {}

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, bool | dict[str, Any] | list[dict[str, Any]]]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> bool | dict[str, Any] | list[dict[str, Any]]:
        chat_id = data.get("chat_id")
        if chat_id is None:
            return await super().process_request(callback, args, kwargs, endpoint, data, rate_limit_args)
        if self._interval > 0 and endpoint.startswith("send") and isinstance(chat_id, int) and chat_id > 0:
            gate = self._chats.get(chat_id)
            if gate is None:
                if len(self._chats) > 4096:  # forget idle chats
                    self._chats = {k: v for k, v in self._chats.items() if v.lock.locked()}
                gate = self._chats[chat_id] = _ChatGate()
            async with gate.lock:
                loop = asyncio.get_running_loop()
                wait = gate.last + self._interval - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                try:
                    async with self._overall.slot():
                        return await super().process_request(callback, args, kwargs, endpoint, data,
                                                              rate_limit_args)
                finally:
                    gate.last = loop.time()
        async with self._overall.slot():
            return await super().process_request(callback, args, kwargs, endpoint, data, rate_limit_args)


async def with_retries(call: Callable[[], Awaitable[T]], *, attempts: int, what: str) -> T:
    """Run `call`, retrying network errors and 5xx with backoff (0.2 s, doubling, ≤ 5 s).
    Bad requests are not retried; RetryAfter is retried by `FloodLimiter` already."""
    delay = 0.2
    for attempt in range(attempts + 1):
        try:
            return await call()
        except BadRequest:
            raise
        except NetworkError as exc:
            if attempt == attempts:
                raise
            log.warning("%s failed (%s); retrying in %.1fs", what, type(exc).__name__, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
    raise AssertionError("unreachable")


class RedactToken(logging.Filter):
    """Replaces the bot token in log records (httpx logs request URLs, which contain it) and
    drops PTB's debug dumps of received updates (they would contain secret answers)."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._token = token

    def filter(self, record: logging.LogRecord) -> bool:
        msg = str(record.msg)
        args = record.args if isinstance(record.args, tuple) else ()
        if msg.startswith("Call to Bot API endpoint") and args and args[0] == "getUpdates":
            record.args = ("getUpdates", "[updates not logged]")
        elif msg.startswith("Error while parsing updates"):
            record.args = ("[updates not logged]",)
        if self._token in msg:
            record.msg = msg.replace(self._token, "<bot-token>")
        if isinstance(record.args, tuple) and any(self._token in str(a) for a in record.args):
            record.args = tuple(  # keep the types of other args: the format may say %d
                str(a).replace(self._token, "<bot-token>") if self._token in str(a) else a for a in record.args
            )
        return True


def install_log_redaction(token: str) -> RedactToken:
    redactor = RedactToken(token)
    for name in ("httpx", "telegram.Bot", "telegram.ext.ExtBot", "telegram.ext.Application"):
        logging.getLogger(name).addFilter(redactor)
    return redactor


def remove_log_redaction(redactor: RedactToken) -> None:
    for name in ("httpx", "telegram.Bot", "telegram.ext.ExtBot", "telegram.ext.Application"):
        logging.getLogger(name).removeFilter(redactor)
