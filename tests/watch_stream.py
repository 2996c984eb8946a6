"""A watch stream (`POST /v1/requests:watch`) read event by event, for the tests: a parser of
its own (not the clients'), so a fault in one does not hide in the other."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

WITHIN = 10.0  # every wait's deadline (seconds): generous for a loaded machine, never slept


@dataclass
class Stream:
    """The events read so far (`events`: (kind, data)) and the comments (`comments`)."""

    response: httpx.Response
    events: list[tuple[str, Any]] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)

    async def read(self) -> None:
        kind, data = "message", []
        async for line in self.response.aiter_lines():
            if line.startswith(":"):
                self.comments.append(line[1:].strip())
                self.arrived.set()
            elif line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "" and data:
                self.events.append((kind, json.loads("\n".join(data))))
                kind, data = "message", []
                self.arrived.set()
        self.ended.set()

    async def until(self, count: int) -> list[tuple[str, Any]]:
        """Once `count` events have arrived (a deadline, never a sleep)."""
        async with asyncio.timeout(WITHIN):
            while len(self.events) < count:
                if self.ended.is_set():
                    raise AssertionError(f"the stream ended after {self.events}")
                self.arrived.clear()
                await self.arrived.wait()
        return self.events[:count]

    def closed_ids(self) -> list[str]:
        return [data["id"] for kind, data in self.events if kind == "closed"]


@asynccontextmanager
async def watching(base_url: str, ids: list[str], *, headers: dict[str, str] | None = None,
                   wait: float = 60) -> AsyncIterator[Stream]:
    """A watch stream open on `ids` (its response begun: every id registered) while the block runs."""
    async with httpx.AsyncClient(base_url=base_url, headers=headers or {}, timeout=wait + WITHIN) as client, \
            client.stream("POST", "/v1/requests:watch", json={"ids": ids, "wait": wait}) as response:
        assert response.status_code == 200, (await response.aread()).decode()
        assert response.headers["content-type"].startswith("text/event-stream")
        stream = Stream(response)
        reader = asyncio.ensure_future(stream.read())
        try:
            yield stream
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
