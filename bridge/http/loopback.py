"""Serve a small ASGI app on 127.0.0.1 for the length of a block (the demo's callback
receiver; test and benchmark counterparts): uvicorn on a port the OS picks."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Generator
from typing import Any

import uvicorn

START_WITHIN_S = 10.0


class _Server(uvicorn.Server):
    """uvicorn leaving signals to the program it runs in: a Ctrl-C stopping the demo must
    not take its callback receiver down before the last outcomes are delivered to it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


@contextlib.asynccontextmanager
async def serving(app: Any, what: str, **config: Any) -> AsyncIterator[int]:
    """Run `app` until the block ends; yields its port. `config`: more uvicorn.Config keys."""
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="off", **config))
    task = asyncio.create_task(server.serve())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_WITHIN_S
    while not server.started:
        if task.done() or loop.time() > deadline:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise RuntimeError(f"{what} did not start: {task.exception()}")
            raise RuntimeError(f"{what} did not start")
        await asyncio.sleep(0.01)
    try:
        yield int(server.servers[0].sockets[0].getsockname()[1])
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await task
