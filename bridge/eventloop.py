"""The event loop the daemon runs on: uvloop when it is installed, else asyncio's own.

uvloop (libuv under the asyncio API) takes about a third less CPU per HTTP request than
the stock loop: its transports, timers and thread hand-offs (aiosqlite's results) are C.
`HITL_EVENT_LOOP=asyncio` forces the stock loop (to rule the loop out when chasing a
problem); `uvloop` insists on uvloop and fails when it is missing.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
ENV = "HITL_EVENT_LOOP"


def loop_factory(choice: str | None = None) -> tuple[str, Callable[[], asyncio.AbstractEventLoop] | None]:
    """The loop's name and a factory for it (None: asyncio's default)."""
    wanted = (choice if choice is not None else os.environ.get(ENV, "")).strip().lower() or "auto"
    if wanted not in ("auto", "uvloop", "asyncio"):
        raise ValueError(f"{ENV}={wanted!r}: expected uvloop, asyncio or auto")
    if wanted == "asyncio":
        return "asyncio", None
    try:
        import uvloop
    except ImportError:
        if wanted == "uvloop":
            raise ValueError(f"{ENV}=uvloop but uvloop is not installed (pip install uvloop)") from None
        return "asyncio", None
    return "uvloop", uvloop.new_event_loop


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """`uvloop` or `asyncio`: which loop runs (for the start-up line)."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


def run(main: Coroutine[Any, Any, T], factory: Callable[[], asyncio.AbstractEventLoop] | None) -> T:
    """`asyncio.run(main)` on the loop `factory` makes (None: asyncio's default)."""
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
