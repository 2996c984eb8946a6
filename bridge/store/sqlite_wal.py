"""Keeping the SQLite WAL small: checkpoints off the hot path, and a bound.

In WAL mode every commit appends to `<db>-wal`; a checkpoint copies those pages into the
database file, and the next writer starts the WAL over only when a checkpoint caught up
completely. Under steady traffic a PASSIVE checkpoint never catches up (commits arrive
while it runs), so the WAL grew without bound (1.14 GB after 60,000 requests) and stayed
until a clean shutdown. Here:

- a second connection, in its own thread, runs a PASSIVE checkpoint at most once a second
  when the WAL changed: no commit waits for the checkpoint's fsync;
- once the WAL passes SOFT_LIMIT it follows that with a TRUNCATE checkpoint: commits wait
  for it, but only for the pages written since the PASSIVE one; then the WAL starts over
  from zero bytes;
- `journal_size_limit` (SOFT_LIMIT) trims a WAL that starts over by itself, and once
  writes stop for IDLE_S the WAL is truncated to nothing (not only at a clean shutdown);
- should the WAL still pass HARD_LIMIT (writes faster than the checkpointer), the next
  commit checkpoints and truncates it first (`truncate_now`).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import aiosqlite

SOFT_LIMIT = 16 * 1024 * 1024
HARD_LIMIT = 48 * 1024 * 1024
TICK_S = 0.25
PASSIVE_EVERY_S = 1.0
CHECKPOINT_BUSY_MS = 2000  # how long a TRUNCATE waits for readers before it settles for less
HOLD_S = 5.0  # the longest a commit waits for the WAL to be truncated past HARD_LIMIT
IDLE_S = 5.0  # no write for this long after a checkpoint: the WAL is truncated to zero bytes


def wal_of(db: Path) -> Path:
    return Path(f"{db}-wal")


def stamp(path: Path) -> tuple[int, int] | None:
    """(mtime, size) of a file, None when it does not exist."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def over_hard_limit(db: Path | str) -> bool:
    """Whether the WAL of `db` has grown past HARD_LIMIT (checked before every commit: os.stat
    on a str, no pathlib)."""
    try:
        return os.stat(f"{db}-wal").st_size > HARD_LIMIT
    except OSError:
        return False


def truncate_now(conn: sqlite3.Connection) -> None:
    """Checkpoint and truncate the WAL before the next commit, waiting (up to HOLD_S) for a
    checkpoint already running on the other connection to let go. A WAL past HARD_LIMIT
    means the checkpointer fell behind: writers wait rather than let the file grow."""
    deadline = time.monotonic() + HOLD_S
    while True:
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.Error as exc:
            code = getattr(exc, "sqlite_errorcode", 0) or 0
            if code & 0xFF not in (5, 6):  # not busy/locked (full, I/O): the commit will tell
                return
            busy = 1
        if not busy or time.monotonic() > deadline:
            return
        time.sleep(0.01)


async def prepare(conn: aiosqlite.Connection) -> None:
    """Settings of the checkpointing connection."""
    await conn.execute(f"PRAGMA busy_timeout={CHECKPOINT_BUSY_MS}")
    await conn.execute(f"PRAGMA journal_size_limit={SOFT_LIMIT}")


async def keep_small(conn: aiosqlite.Connection, db: Path, on_error: Callable[[sqlite3.Error], None]) -> None:
    """Checkpoint `db`'s WAL on `conn` until cancelled (see the module docstring)."""
    wal = wal_of(db)
    done_at: tuple[int, int] | None = None  # the WAL's (mtime, size) after the last checkpoint
    passive_at = 0.0
    while True:
        await asyncio.sleep(TICK_S)
        now = stamp(wal)
        if now is None or now == done_at:
            if now and now[1] and time.monotonic() - passive_at > IDLE_S:  # writes stopped: give the disk back
                try:
                    await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error as exc:
                    on_error(exc)
                done_at = stamp(wal)
            continue  # nothing written since: an idle daemon does no checkpoint work
        big = now[1] > SOFT_LIMIT
        if not big and time.monotonic() - passive_at < PASSIVE_EVERY_S:
            continue
        try:
            await conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            if big:  # most pages are copied by now, without blocking anyone: the blocking part is short
                await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:  # busy, full or I/O trouble: told once, tried again next round
            on_error(exc)
            continue
        passive_at = time.monotonic()
        done_at = stamp(wal)
