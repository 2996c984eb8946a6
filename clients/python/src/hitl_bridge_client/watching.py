"""`wait_many`'s bookkeeping, written once for both clients (no I/O here): the ids still open,
the body of the next watch stream (`POST /v1/requests:watch`), its events read line by line,
and what each event means for the caller.

A stream that drops (the daemon restarting, a proxy cutting it) is opened again with the ids
still open: the daemon reports at once those that closed meanwhile, so nothing is lost.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from hitl_bridge_client.answers import Answer, outcome
from hitl_bridge_client.errors import BridgeError, Missing, NoAnswer, StillOpen

PATH = "/v1/requests:watch"
MAX_IDS = 10_000  # the daemon's limit per stream
STREAM_WAIT_S = 3600.0  # one stream's wait at most (the daemon's limit)
#: the daemon sends a keep-alive every 15 s: this long without a byte, the connection is dead
READ_TIMEOUT_S = 45.0

#: what `wait_many` yields for each id: its Answer, or why there is none (not raised, so the
#: others keep coming): NoAnswer (closed without one), Missing (no such request, or not the
#: token's to wait on), StillOpen (`max_wait` ran out first)
Outcome = Answer | NoAnswer | Missing | StillOpen


class Events:
    """Server-sent events from a stream's lines: `line()` returns (kind, data) when one is complete."""

    def __init__(self) -> None:
        self._kind = "message"
        self._data: list[str] = []

    def line(self, line: str) -> tuple[str, Any] | None:
        if line.startswith(":"):
            return None  # a keep-alive comment
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            self._kind = value
        elif field == "data":
            self._data.append(value)
        elif line == "" and self._data:
            kind, data = self._kind, "\n".join(self._data)
            self._kind, self._data = "message", []
            try:
                return kind, json.loads(data)
            except ValueError:
                raise BridgeError(f"the bridge's watch stream sent an event that is not JSON: {data[:200]!r}") \
                    from None
        elif line == "":
            self._kind = "message"
        return None


class Waits:
    """The ids `wait_many` still waits on, in the order given, and until when."""

    def __init__(self, ids: Iterable[str], max_wait: float | None) -> None:
        self.open: dict[str, None] = dict.fromkeys(str(i) for i in ids)
        if len(self.open) > MAX_IDS:
            raise BridgeError(f"wait_many takes at most {MAX_IDS:,} ids (got {len(self.open):,})")
        self.deadline = None if max_wait is None else time.monotonic() + max_wait
        self.ended = False  # the stream being read sent its `end` (else it was cut)

    def body(self) -> dict[str, Any] | None:
        """The next stream's body; None when `max_wait` has run out."""
        self.ended = False
        left = STREAM_WAIT_S if self.deadline is None else min(STREAM_WAIT_S, self.deadline - time.monotonic())
        if left <= 0:
            return None
        return {"ids": list(self.open), "wait": max(round(left, 3), 0.001)}

    def ran_out(self) -> list[Outcome]:
        """`max_wait` passed: a StillOpen for each id still open, and no more waiting."""
        left, self.open = list(self.open), {}
        return [StillOpen(request_id, "open") for request_id in left]

    def line(self, events: Events, line: str) -> list[Outcome]:
        """What the caller gets from one line of the stream."""
        found = events.line(line)
        return [] if found is None else self.event(*found)

    def event(self, kind: str, data: Any) -> list[Outcome]:
        """What the caller gets from one event (an `end` whose wait ran out while ours has
        not is nothing: the next stream picks up the ids still open)."""
        if kind == "closed" and isinstance(data, dict) and str(data.get("id")) in self.open:
            self.open.pop(str(data["id"]))
            try:
                found = outcome(data)
            except NoAnswer as exc:
                return [exc]
            return [found] if found is not None else []
        if kind == "missing" and isinstance(data, dict) and str(data.get("id")) in self.open:
            request_id = str(data["id"])
            self.open.pop(request_id)
            return [Missing(request_id, str(data.get("detail") or f"no request {request_id!r}"))]
        if kind == "end":  # "shutdown" counts as cut: the next stream waits for the daemon to be back
            self.ended = not (isinstance(data, dict) and data.get("reason") == "shutdown")
            if self.open and self.deadline is not None and time.monotonic() >= self.deadline:
                return self.ran_out()
        return []
