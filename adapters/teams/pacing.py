"""Pacing of Bot Connector calls: each conversation gets at most `calls_per_s` call starts
a second (Teams limits a bot per conversation: 7 a second by its docs), spaced evenly in
arrival order; and a 429's Retry-After holds every call to that service URL until it
passes, so a burst of callers does not run into the limit again together."""

from __future__ import annotations

import asyncio
import time


class Pacer:
    def __init__(self, calls_per_s: float) -> None:
        self.interval_s = 1.0 / calls_per_s if calls_per_s > 0 else 0.0
        self._next: dict[str, float] = {}
        self._held_until: dict[str, float] = {}

    async def turn(self, service_url: str, conversation_id: str) -> None:
        """Wait for this call's slot in the conversation (and any hold on the service)."""
        now = time.monotonic()
        key = f"{service_url}|{conversation_id}"
        slot = max(now, self._next.get(key, now), self._held_until.get(service_url, now))
        self._next[key] = slot + self.interval_s
        if len(self._next) > 10_000:  # forget conversations whose slots have passed
            self._next = {k: v for k, v in self._next.items() if v > now}
        if slot > now:
            await asyncio.sleep(slot - now)

    def hold(self, service_url: str, seconds: float) -> None:
        """Teams said 429 with Retry-After: nothing goes to `service_url` for `seconds`."""
        until = time.monotonic() + seconds
        if until > self._held_until.get(service_url, 0.0):
            self._held_until[service_url] = until
