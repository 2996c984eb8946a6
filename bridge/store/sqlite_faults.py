"""What can go wrong with the SQLite file under a running bridge, and how it is told.

- `fault_of` turns SQLite's and the OS's errors into `StoreFull` / `StoreUnavailable`, with
  a message fit for an API caller and a fix for the operator; other errors (bugs) pass.
- `FileGuard` remembers which file was opened (device and inode). SQLite keeps writing
  happily into a file that was deleted or replaced under it (the open descriptors still
  work), so every commit checks first: once the path no longer names the opened file,
  writes are refused for good and a copy of everything kept so far is saved next to it.
  Reopening by itself would be wrong both ways: a new empty file would silently drop what
  was acknowledged, and a file someone put back (a backup) would fork the history.
- `probe` is the health check: the file is still ours, its folder is writable (else the
  next start fails), there is room, and, when in doubt, a write commits.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

from bridge.health import Check, Status
from bridge.store.base import StoreError, StoreFull, StoreUnavailable

# SQLite primary result codes (the low byte of the extended code)
SQLITE_PERM, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY = 3, 5, 6, 8
SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_PROTOCOL, SQLITE_NOTADB = 10, 11, 13, 14, 15, 26
_BROKEN = {SQLITE_PERM, SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_CANTOPEN, SQLITE_PROTOCOL, SQLITE_NOTADB}
#: less room than this (in the database's own limit or on the disk) counts as full
ROOM_MIN = 256 * 1024
COMPONENT = "store"


def fault_of(exc: BaseException, path: Path) -> StoreError | None:
    """The store fault `exc` stands for, or None when it is not one (a bug: let it raise)."""
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        if primary == SQLITE_FULL:
            return full(path)
        if primary == SQLITE_READONLY:
            return StoreUnavailable(f"store read-only: {exc}", fix=writable_fix(path))
        if primary in (SQLITE_BUSY, SQLITE_LOCKED):
            return StoreUnavailable(
                "store busy: the database stayed locked for 30 s",
                fix=f"another process holds a write lock on {path} (a sqlite3 shell inside a transaction?)")
        if primary in _BROKEN:
            return StoreUnavailable(f"store unavailable: {exc}",
                                    fix=f"check the disk and the file {path} (the kernel log may say more)")
        return None
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return full(path)
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return StoreUnavailable(f"store read-only: {exc.strerror}", fix=writable_fix(path))
        return StoreUnavailable(f"store unavailable: {exc.strerror or exc}", fix=f"check the disk under {path.parent}")
    return None


def is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED)


def full(path: Path) -> StoreFull:
    return StoreFull("store full: database or disk is full",
                     fix=f"free disk space under {path.parent} (or raise max_size in store.url); "
                         "the bridge takes writes again by itself")


def writable_fix(path: Path) -> str:
    return (f"make {path.parent} and the files in it writable by uid {os.geteuid()} (SQLite creates "
            f"{path.name}-wal and {path.name}-shm there), or set store.url to a writable place")


def open_error(exc: BaseException, path: Path) -> StoreError:
    """The one-line error a start on an unusable file gives."""
    fault = fault_of(exc, path)
    if isinstance(fault, StoreFull):
        return StoreFull(f"cannot open the SQLite store at {path}: the disk is full", fix=fault.fix)
    reason = str(exc) if isinstance(exc, sqlite3.Error) else (getattr(exc, "strerror", None) or str(exc))
    return StoreUnavailable(f"cannot open the SQLite store at {path}: {reason}", fix=writable_fix(path))


class FileGuard:
    """Is the file at `path` still the one this store opened?"""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._name = os.fspath(path)  # os.stat on a str: no pathlib on every commit
        self.identity: tuple[int, int] | None = None
        self.lost: StoreUnavailable | None = None

    def remember(self) -> None:
        st = self.path.stat()
        self.identity = (st.st_dev, st.st_ino)

    def verify(self, conn: sqlite3.Connection) -> StoreUnavailable | None:
        """None while the path names the opened file. Else (from then on) the error that
        refuses writes; the first time, save what the connection still reads to a copy."""
        if self.lost is not None or self.identity is None:
            return self.lost
        try:
            st = os.stat(self._name)
        except FileNotFoundError:
            what = "deleted"
        except OSError:
            return None  # cannot tell (a permission on the folder changed): the probe reports that
        else:
            if (st.st_dev, st.st_ino) == self.identity:
                return None
            what = "replaced by another file"
        self.lost = StoreUnavailable(
            f"store unavailable: the database file was {what} while the bridge ran; writes are refused",
            fix=self._rescue(conn))
        return self.lost

    def _rescue(self, conn: sqlite3.Connection) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        copy = self.path.with_name(f"{self.path.name}.rescued-{stamp}")
        try:
            copy.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.closing(sqlite3.connect(copy)) as target:
                conn.backup(target)
        except (sqlite3.Error, OSError) as exc:
            return (f"could not save a copy to {copy} ({exc}): this process still holds every request; "
                    f"keep it running and copy its open file (ls -l /proc/{os.getpid()}/fd) before stopping it")
        return (f"everything kept until then was saved to {copy}: stop the bridge, remove any "
                f"{self.path.name}-wal / -shm left next to it, move the copy to {self.path} (or restore "
                "your backup) and start it again")

    def access_problem(self) -> StoreUnavailable | None:
        """The folder or file cannot be written any more: the open file may still take
        writes, but the next start cannot open it."""
        folder = self.path.parent
        if not os.access(folder, os.W_OK | os.X_OK):
            what = f"the store folder {folder} is read-only"
        elif self.path.exists() and not os.access(self.path, os.W_OK):
            what = f"the store file {self.path} is read-only"
        else:
            return None
        return StoreUnavailable(f"store read-only: {what}; the bridge may not start again like this",
                                fix=writable_fix(self.path))


def room_problem(conn: sqlite3.Connection, path: Path) -> StoreFull | None:
    """Full when less than ROOM_MIN is left in the database's own limit or on the disk."""
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free_pages = conn.execute("PRAGMA freelist_count").fetchone()[0]
    max_pages = conn.execute("PRAGMA max_page_count").fetchone()[0]
    in_limit = (max_pages - pages + free_pages) * page_size
    st = os.statvfs(path.parent)
    on_disk = st.f_frsize * (st.f_bfree if os.geteuid() == 0 else st.f_bavail)
    return full(path) if min(in_limit, on_disk) < ROOM_MIN else None


def commit_test(conn: sqlite3.Connection) -> None:
    """One small write in its own transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT INTO meta (key, value) VALUES ('health_probe', ?) "
                     "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (str(time.time()),))
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        raise


def probe(conn: sqlite3.Connection, guard: FileGuard, *, test_commit: bool) -> Check:
    """The store's health, run in the connection's thread (see the module docstring)."""
    if guard.identity is None:  # an in-memory database: no file to watch
        return Check(COMPONENT, Status.ok, "SQLite store in memory")
    problem: StoreError | None = guard.verify(conn) or guard.access_problem()
    if problem is None:
        try:
            problem = room_problem(conn, guard.path)
            if problem is None and test_commit:
                commit_test(conn)
        except (sqlite3.Error, OSError) as exc:
            problem = fault_of(exc, guard.path)
            if problem is None:
                raise
    if problem is not None:
        return Check(COMPONENT, Status.failing, str(problem), problem.fix)
    return Check(COMPONENT, Status.ok, "SQLite store writable")
