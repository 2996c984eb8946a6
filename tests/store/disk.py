"""Real filesystem faults for store tests: a tiny filesystem that fills up, a folder that
turns read-only. Each needs what it needs (root for mount and chattr; a non-root user for
chmod to mean anything) and skips with the reason when it is not there."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _run(*argv: str) -> str | None:
    """None when the command succeeded, else why not."""
    if shutil.which(argv[0]) is None:
        return f"{argv[0]} is not installed"
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return None if done.returncode == 0 else (done.stderr.strip() or f"{argv[0]} exited {done.returncode}")


@contextmanager
def tiny_filesystem(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (root only: mounting needs CAP_SYS_ADMIN)."""
    if os.geteuid() != 0:
        pytest.skip("a tiny filesystem needs root to mount a tmpfs (the max_size test covers a full store)")
    where.mkdir(parents=True, exist_ok=True)
    problem = _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where))
    if problem:
        pytest.skip(f"cannot mount a tmpfs here: {problem}")
    try:
        yield where
    finally:
        _run("umount", "-l", str(where))


def fill(folder: Path, leave: int) -> Path:
    """A ballast file that takes all the free space of `folder`'s filesystem but `leave` bytes."""
    st = os.statvfs(folder)
    free = st.f_frsize * st.f_bfree
    ballast = folder / "ballast"
    with ballast.open("wb") as out:
        out.write(b"\0" * max(0, free - leave))
    return ballast


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """Make `folder` read-only for this process: chmod for an ordinary user; for root (whom
    permissions do not stop) the immutable attribute, where the filesystem supports it."""
    if os.geteuid() != 0:
        mode = folder.stat().st_mode
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(mode)
        return
    problem = _run("chattr", "+i", str(folder))
    if problem:
        pytest.skip(f"root ignores chmod, and chattr +i does not work here: {problem}")
    try:
        yield
    finally:
        _run("chattr", "-i", str(folder))
