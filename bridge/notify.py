"""In-process change notifications: long-polls and live views wait on these."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from bridge.models import Request


class ChangeFeed:
    """Wakes waiters when a request changes; subscribers get every change."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Future[Request]]] = defaultdict(set)
        self._subscribers: set[asyncio.Queue[Request]] = set()
        self._released = False

    def publish(self, request: Request) -> None:
        for fut in self._waiters.pop(request.id, set()):
            if not fut.done():
                fut.set_result(request)
        for queue in list(self._subscribers):
            if queue.qsize() < 1000:  # a stuck subscriber must not grow without bound
                queue.put_nowait(request)

    def waiter(self, request_id: str) -> asyncio.Future[Request]:
        """A future resolved with the request's next change (cancelled when shutting down)."""
        fut: asyncio.Future[Request] = asyncio.get_running_loop().create_future()
        if self._released:
            fut.cancel()
        else:
            self._waiters[request_id].add(fut)
        return fut

    def release_waiters(self) -> None:
        """Shutting down: wake every long poll now (each answers with the request as it is)."""
        self._released = True
        for waiters in self._waiters.values():
            for fut in waiters:
                fut.cancel()
        self._waiters.clear()

    def discard(self, request_id: str, fut: asyncio.Future[Request]) -> None:
        waiters = self._waiters.get(request_id)
        if waiters is not None:
            waiters.discard(fut)
            if not waiters:
                self._waiters.pop(request_id, None)

    def subscribe(self) -> asyncio.Queue[Request]:
        queue: asyncio.Queue[Request] = asyncio.Queue()
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Request]) -> None:
        self._subscribers.discard(queue)
