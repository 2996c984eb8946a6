"""One daemon per SQLite store: `serve` holds an OS lock (flock) on `<db>.lock` beside the
database while it runs, so a second `serve` on the same file (another port, same folder) is
refused, naming the first one's pid and address. The kernel drops the lock when the process
ends, however it ends: no stale lock to clean up. PostgreSQL stores take no lock (several
replicas share one database on purpose)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, no lock
    fcntl = None  # type: ignore[assignment]


class StoreInUse(Exception):
    """Another daemon holds the store's lock."""


def lock_path(store_url: str) -> Path | None:
    """`<db>.lock` for a SQLite store URL; None for PostgreSQL or an in-memory database."""
    if not store_url.startswith("sqlite:///"):
        return None
    db = store_url.removeprefix("sqlite:///").partition("?")[0]
    if db in ("", ":memory:"):
        return None
    path = Path(db)
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def one_daemon_per_store(store_url: str, listen: str) -> Iterator[None]:
    """Hold the store's lock for the block; StoreInUse when another daemon holds it."""
    path = lock_path(store_url)
    if path is None or fcntl is None:
        yield
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:  # a folder that cannot be written: the store cannot open either, and says why
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "pid unknown"
            raise StoreInUse(f"another hitl-bridge daemon ({holder}) is using the store {path.with_suffix('')}; "
                             "stop it, or give this one its own store.url (or run it in another folder)") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, listening on {listen}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing drops the lock; a crash drops it too
