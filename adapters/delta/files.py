"""Reading files that anyone able to write into a workspace controls, without ever blocking.

Where a file is expected, an agent's folder may hold a FIFO, a socket, a device, a folder or
a symlink to anywhere. Every read here resolves the path, refuses what leads outside the
folder it must stay in, refuses anything but a regular file *before* opening it, and then
opens with O_NONBLOCK | O_NOFOLLOW and checks again: a FIFO planted at `.delta/VERSION`
can never block the source (a blocking open of a FIFO waits for a writer forever).

Plain blocking functions: callers run them in a thread.
"""

from __future__ import annotations

import errno
import os
import stat

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_GONE = (errno.ENOENT, errno.ENOTDIR)


class MailboxError(Exception):
    """A file the source needs cannot be used. `retryable`: it may still be being written.

    `kind` names the problem without its details (a size, a parser position), so a file
    rewritten over and over with the same fault is reported once, not once per write.
    """

    def __init__(self, path: str, reason: str, *, retryable: bool = False, kind: str = "") -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.retryable = retryable
        self.kind = kind or reason


class MailboxGone(MailboxError):
    """The file (or its whole workspace) no longer exists."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "no longer exists", kind="gone")


class OutsideWorkspace(Exception):
    """A path leads (through a symlink) outside the folder it must stay in."""

    def __init__(self, path: str, workspace: str) -> None:
        super().__init__(f"{path}: leads outside {workspace} (symlink?); refused")
        self.path = path
        self.workspace = workspace


def within(real: str, boundary_real: str) -> bool:
    """True when the resolved path `real` is `boundary_real` or below it."""
    return real == boundary_real or real.startswith(boundary_real.rstrip(os.sep) + os.sep)


def inside(path: str, workspace_real: str) -> bool:
    """True when `path`, with every symlink resolved, is `workspace_real` or below it."""
    return within(os.path.realpath(path), workspace_real)


def confined(path: str, workspace: str) -> str:
    """`path` resolved, or OutsideWorkspace when it escapes `workspace`."""
    real = os.path.realpath(path)
    if not within(real, os.path.realpath(workspace)):
        raise OutsideWorkspace(path, workspace)
    return real


def unreadable(path: str, exc: OSError) -> MailboxError:
    """The error for a file or folder that exists but cannot be looked at (mode 000, ...)."""
    if exc.errno in _GONE:
        return MailboxGone(path)
    return MailboxError(path, f"cannot be read: {exc.strerror or exc} (check its owner and mode)",
                        kind=f"unreadable:{exc.errno}")


def read_bytes(path: str, workspace: str, limit: int) -> bytes:
    """The content of a regular file that stays inside `workspace` and holds at most `limit`
    bytes; MailboxGone when it does not exist, MailboxError for anything else wrong."""
    try:
        real = confined(path, workspace)
    except OutsideWorkspace:
        raise MailboxError(path, "leads outside the workspace (symlink); refused", kind="outside") from None
    try:
        before = os.lstat(real)
    except OSError as exc:
        raise unreadable(path, exc) from None
    _check_regular(path, before, limit)
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno in _GONE:
            raise MailboxGone(path) from None
        if exc.errno == errno.ELOOP:  # swapped for a symlink since the lstat
            raise MailboxError(path, "is a symlink; refused", kind="not_regular") from None
        raise MailboxError(path, f"cannot be read: {exc.strerror or exc}", retryable=True,
                           kind=f"unreadable:{exc.errno}") from None
    try:
        _check_regular(path, os.fstat(fd), limit)  # the file opened is the one checked
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise MailboxError(path, f"cannot be read: {exc.strerror or exc}", retryable=True,
                           kind=f"unreadable:{exc.errno}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise MailboxError(path, f"grew over the {limit}-byte limit while being read", kind="too_big")
    return b"".join(chunks)


def _check_regular(path: str, st: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise MailboxError(path, not_regular(st.st_mode), kind="not_regular")
    if st.st_size > limit:
        raise MailboxError(path, f"is {st.st_size} bytes, over the {limit}-byte limit", kind="too_big")


def not_regular(mode: int) -> str:
    """Why a file of this mode is refused."""
    return f"is {_what(mode)}, not a regular file; refused"


def _what(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "not a plain file"
