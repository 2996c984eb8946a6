"""Reading an AG-UI event stream (Server-Sent Events whose data is one JSON event each)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from ag_ui.core import Event
from pydantic import TypeAdapter, ValidationError

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
MAX_EVENT_BYTES = 1_000_000


class StreamBroken(ValueError):
    """The agent's stream is not AG-UI (the message says what was wrong)."""


def parse_event(data: str) -> Any:
    """One `data:` payload as an AG-UI event; raises StreamBroken."""
    if len(data) > MAX_EVENT_BYTES:
        raise StreamBroken(f"an event over {MAX_EVENT_BYTES} bytes")
    try:
        return EVENTS.validate_python(json.loads(data))
    except (ValueError, ValidationError) as exc:
        raise StreamBroken(f"not an AG-UI event: {str(exc)[:200]}") from None


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The data of each Server-Sent Event in `lines` (multi-line data joined with \\n)."""
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield "\n".join(data)
