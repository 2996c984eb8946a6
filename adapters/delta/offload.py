"""Blocking file-system work off the event loop, where a hung filesystem cannot hold up
the daemon: not its other workspaces, not its shutdown.

`asyncio.to_thread` would do the work, but its pool threads are joined when the process
exits, so one `stat` stuck on a dead network mount keeps `hitl-bridge serve` from ever
ending. Here each piece of work gets a daemon thread of its own (a scan batch, one read),
and `LookGuard` sets aside a workspace whose look does not return, so the rest go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V")

STALL_AFTER_S = 10.0


async def in_thread(fn: Callable[..., T], *args: Any, name: str = "delta-io") -> T:
    """`fn(*args)` in a daemon thread of its own; cancelling the wait leaves it to finish
    (or hang) on its own without keeping the process alive."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def run() -> None:
        try:
            outcome: tuple[bool, Any] = (True, fn(*args))
        except BaseException as exc:  # handed to the awaiting task, never lost in the thread
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future


class _Batch(Generic[V]):
    """The shared state of one thread working through a list of workspaces."""

    def __init__(self, items: Sequence[str]) -> None:
        self.items = items
        self.lock = threading.Lock()
        self.index = 0  # the item being looked at
        self.started = time.monotonic()
        self.results: list[V] = []
        self.abandoned = False
        self.on_late: Callable[[], None] | None = None

    def run(self, look: Callable[[str], V]) -> None:
        while True:
            with self.lock:
                if self.abandoned or self.index >= len(self.items):
                    return
                item = self.items[self.index]
                self.started = time.monotonic()
            try:
                value = look(item)
            except BaseException:
                self._back_late()
                raise
            with self.lock:  # the check and the append together: never lost between the two
                if not self.abandoned:
                    self.results.append(value)
                    self.index += 1
                    continue
            self._back_late()  # came back after being set aside
            return

    def _back_late(self) -> None:
        with self.lock:
            late = self.on_late if self.abandoned else None
        if late is not None:
            late()


class LookGuard:
    """Runs `look(workspace)` for many workspaces in daemon threads. A look that has not
    returned after `stall_after_s` is set aside: `on_stalled(workspace)` is called, the
    rest of the batch goes on in a new thread, and the workspace is skipped until its
    look returns (then `on_recovered(workspace)`, on the loop)."""

    def __init__(self, on_stalled: Callable[[str], None], on_recovered: Callable[[str], None],
                 stall_after_s: float = STALL_AFTER_S) -> None:
        self.stall_after_s = stall_after_s
        self.stalled: dict[str, float] = {}  # workspace → since when (monotonic)
        self._on_stalled = on_stalled
        self._on_recovered = on_recovered

    async def map(self, look: Callable[[str], V], workspaces: Sequence[str]) -> list[V]:
        """`look` of each workspace not set aside, in order; the stalled ones are left out."""
        loop = asyncio.get_running_loop()
        results: list[V] = []
        pending = [w for w in workspaces if w not in self.stalled]
        while pending:
            batch: _Batch[V] = _Batch(pending)
            finished = asyncio.ensure_future(in_thread(batch.run, look, name="delta-scan"))
            pending = []
            while True:
                wait = max(0.05, batch.started + self.stall_after_s - time.monotonic())
                try:
                    done, _ = await asyncio.wait({finished}, timeout=min(wait, self.stall_after_s))
                except asyncio.CancelledError:  # the source stops: the thread ends (or hangs) alone
                    finished.cancel()
                    raise
                if done:
                    finished.result()
                    results.extend(batch.results)
                    break
                with batch.lock:
                    if time.monotonic() - batch.started < self.stall_after_s or batch.index >= len(batch.items):
                        continue
                    batch.abandoned = True
                    stuck = batch.items[batch.index]
                    results.extend(batch.results)
                    pending = list(batch.items[batch.index + 1:])
                    batch.on_late = self._late(loop, stuck)
                finished.cancel()
                self.stalled[stuck] = time.monotonic()
                self._on_stalled(stuck)
                break
        return results

    def _late(self, loop: asyncio.AbstractEventLoop, workspace: str) -> Callable[[], None]:
        def back() -> None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._recover, workspace)
        return back

    def _recover(self, workspace: str) -> None:
        if self.stalled.pop(workspace, None) is not None:
            self._on_recovered(workspace)
