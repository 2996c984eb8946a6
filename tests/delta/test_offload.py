"""Blocking work in daemon threads: a look that never returns (a hung network mount) is set
aside and the other workspaces go on; it comes back when the look finally returns."""

from __future__ import annotations

import asyncio
import threading

import pytest

from adapters.delta.offload import LookGuard, in_thread
from tests.harness import wait_for


async def test_a_look_that_hangs_is_set_aside_and_the_rest_goes_on() -> None:
    hung = threading.Event()
    stalled: list[str] = []
    recovered: list[str] = []
    guard = LookGuard(stalled.append, recovered.append, stall_after_s=0.2)

    def look(workspace: str) -> str:
        if workspace == "nfs" and not hung.is_set():
            hung.wait()  # a stat() on a dead mount: nothing the bridge can interrupt
        return workspace.upper()

    found = await guard.map(look, ["a", "nfs", "b", "c"])
    assert found == ["A", "B", "C"]
    assert stalled == ["nfs"] and "nfs" in guard.stalled
    assert await guard.map(look, ["nfs", "d"]) == ["D"]  # skipped, not looked at again meanwhile
    hung.set()  # the mount answers again
    await wait_for(lambda: recovered == ["nfs"])
    assert not guard.stalled
    assert await guard.map(look, ["nfs"]) == ["NFS"]


async def test_errors_reach_the_caller_and_threads_never_keep_the_process_alive() -> None:
    def fail() -> None:
        raise PermissionError("denied")

    with pytest.raises(PermissionError):
        await in_thread(fail)
    names = {t.name: t.daemon for t in threading.enumerate()}

    started = threading.Event()
    release = threading.Event()

    def block() -> None:
        started.set()
        release.wait()

    pending = in_thread(block, name="delta-test-block")
    waiting = asyncio.ensure_future(pending)
    await wait_for(started.is_set)
    worker = next(t for t in threading.enumerate() if t.name == "delta-test-block")
    assert worker.daemon and "delta-test-block" not in names
    waiting.cancel()  # the caller stops waiting; the thread goes on without holding anything
    release.set()
    await wait_for(lambda: not worker.is_alive())
