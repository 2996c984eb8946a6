"""Concurrent tool calls waiting on answers share one watch stream (`POST /v1/requests:watch`)
instead of holding a long poll each: `hitl-bridge mcp` with many parallel calls keeps one
connection to the daemon for all of them.

The stream covers every id some call waits on. When a call starts waiting on an id the
stream does not cover, a new stream is opened on the new set, and the old one is closed only
once the new one's response has begun (every id registered with the daemon): a request that
closes meanwhile is reported by one of them, or at once by the new one, never by neither.
A call whose wait ends (answered, its hold over, cancelled) just stops listening; the stream
keeps covering its id until the next switch (or until no call waits: it is closed then).

A dropped stream (the daemon restarting) is opened again with backoff; when the daemon does
not answer for the client's `unavailable_after`, every waiting call gets BridgeUnavailable,
as its long poll would have raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import anyio
import httpx
from hitl_bridge_client import AsyncClient, BridgeError, NotFound
from hitl_bridge_client.calls import Call
from hitl_bridge_client.transport import Restarting, Retry
from hitl_bridge_client.watching import PATH

log = logging.getLogger("hitl_bridge.mcp")

View = dict[str, Any]


class Stream:
    """One open watch stream on `ids`: its reader task hands each event to the shared watch."""

    def __init__(self, ids: frozenset[str]) -> None:
        self.ids = ids
        self.ended = asyncio.Event()  # read to its end, or cut
        self.clean = False  # it ended with `end` (all closed, or its wait ran out), not cut or shut down
        self.task: asyncio.Task[None] | None = None

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.wait([self.task])  # its end, whatever it was; a cancellation of ours still stops us


class SharedWatch:
    """The waits of every call, on one stream at a time."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self._waits: dict[str, set[asyncio.Future[View]]] = {}
        self._nudge = asyncio.Event()  # a new id to cover, or the stream ended
        self._runner: asyncio.Task[None] | None = None
        self.streams_opened = 0  # how many streams were opened (tests look)
        self.current: Stream | None = None

    async def wait(self, request_id: str, seconds: float) -> View | None:
        """The request's view once it is closed; None when `seconds` pass first."""
        fut: asyncio.Future[View] = asyncio.get_running_loop().create_future()
        self._waits.setdefault(request_id, set()).add(fut)
        if self.current is None or request_id not in self.current.ids:
            self._nudge.set()
        if self._runner is None or self._runner.done():
            self._runner = asyncio.ensure_future(self._run())
        try:
            with anyio.move_on_after(seconds):
                return await fut
            return None
        finally:
            waiting = self._waits.get(request_id)
            if waiting is not None:
                waiting.discard(fut)
                if not waiting:
                    del self._waits[request_id]

    def waiting(self) -> int:
        return sum(len(f) for f in self._waits.values())

    async def aclose(self) -> None:
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(BaseException):
                await self._runner

    async def _run(self) -> None:
        retry: Retry | None = None
        try:
            while self._waits:
                current = self.current
                if current is None or current.ended.is_set() or not self._waits.keys() <= current.ids:
                    self._nudge.clear()
                    try:
                        if current is not None and current.ended.is_set() and not current.clean:
                            self.current = current = None
                            raise Restarting("the watch stream was cut")
                        new = await self._open(frozenset(self._waits))
                    except httpx.TransportError as exc:  # the daemon restarting: again, with backoff
                        retry = retry or Retry(self.client.endpoint, Call("POST", PATH))
                        try:
                            await asyncio.sleep(retry.delay(exc))
                        except BridgeError as gave_up:
                            retry = None
                            self._fail_all(gave_up)
                        continue
                    except BridgeError as refused:  # a wrong token, a bad id...: said to every call
                        self._fail_all(refused)
                        continue
                    retry = None
                    self.current = new
                    if current is not None:
                        await current.close()  # only now: the new stream covers every id
                    continue
                await self._nudge.wait()
                self._nudge.clear()
        except Exception as exc:  # a bug: said, and every call falls back to reading its request
            log.exception("mcp: the shared watch stream failed")
            self._fail_all(BridgeError(f"waiting on the bridge failed: {exc}"))
        finally:
            # no await before these: a wait() from now on starts a runner of its own
            current, self.current = self.current, None
            if self._runner is asyncio.current_task():
                self._runner = None
            if current is not None:
                await current.close()

    async def _open(self, ids: frozenset[str]) -> Stream:
        """A stream on `ids`, returned once its response has begun (every id registered)."""
        stream = Stream(ids)
        begun: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def read() -> None:
            try:
                async with self.client.watch(sorted(ids)) as events:
                    begun.set_result(None)
                    async for kind, data in events:
                        self._deliver(kind, data)
                        if kind == "end":
                            stream.clean = isinstance(data, dict) and data.get("reason") in ("done", "timeout")
            except BaseException as exc:
                if not begun.done():
                    begun.set_exception(exc if isinstance(exc, Exception) else BridgeError("stream cancelled"))
                elif isinstance(exc, (httpx.TransportError, BridgeError)):
                    log.info("mcp: the watch stream dropped (%s); opening it again", exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
            finally:
                stream.ended.set()
                self._nudge.set()

        stream.task = asyncio.ensure_future(read())
        await begun
        self.streams_opened += 1
        return stream

    def _deliver(self, kind: str, data: Any) -> None:
        if not isinstance(data, dict) or kind not in ("closed", "missing"):
            return
        request_id = str(data.get("id"))
        for fut in self._waits.pop(request_id, ()):
            if fut.done():
                continue
            if kind == "closed":
                fut.set_result(data)
            else:
                fut.set_exception(NotFound(404, str(data.get("detail") or f"no request {request_id!r}")))

    def _fail_all(self, exc: BridgeError) -> None:
        for request_id in list(self._waits):
            for fut in self._waits.pop(request_id, ()):
                if not fut.done():
                    fut.set_exception(exc)
