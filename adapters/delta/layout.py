"""Where Delta Engine keeps its mailboxes, for every engine version (PROTOCOLS §1).

- v1.2 (spec): mailbox `.delta/interaction/`, metadata
  `.delta/runs/<RUN_ID>/execution/metadata.json`, latest run in `.delta/runs/LATEST`.
- v1.3: mailbox `.delta/interaction/`, metadata `.delta/<RUN_ID>/metadata.json`,
  latest run in `.delta/LATEST`.
- v1.4 – v1.9: mailbox `.delta/<RUN_ID>/interaction/`, metadata
  `.delta/<RUN_ID>/metadata.json`, `.delta/LATEST`.
- v1.10: as v1.4 without LATEST (every `.delta/*/` folder is a run).

Everything here is plain, blocking file-system code: callers run it in a thread.
Every path handed out is checked to stay inside its workspace (symlinks included).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from enum import StrEnum

from adapters.delta.files import (
    MailboxError,
    MailboxGone,
    OutsideWorkspace,
    confined,
    inside,
    not_regular,
    read_bytes,
    within,
)

DELTA_DIR = ".delta"
INTERACTION = "interaction"
REQUEST_FILE = "request.json"
RESPONSE_FILE = "response.txt"
#: the signed receipt of the decision written to response.txt (a compact JWS; see docs/guides/audits.md)
RECEIPT_FILE = "response.receipt.jws"
METADATA_FILE = "metadata.json"
LATEST_FILE = "LATEST"
VERSION_FILE = "VERSION"
RUNS_DIR = "runs"

# Names inside `.delta/` that are never run directories.
_NOT_RUNS = frozenset({VERSION_FILE, LATEST_FILE, INTERACTION, RUNS_DIR})
_SMALL_FILES = frozenset({VERSION_FILE, LATEST_FILE})
_RUN_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
_MAX_SMALL_FILE = 4096

__all__ = ["MailboxError", "MailboxGone", "OutsideWorkspace", "confined", "inside", "within"]


class Layout(StrEnum):
    v1_2 = "v1.2"
    v1_3 = "v1.3"
    v1_4 = "v1.4"
    v1_10 = "v1.10"


@dataclass(frozen=True)
class Mailbox:
    """One `interaction/` folder: where `request.json` appears and `response.txt` goes.

    `run_id` and `metadata_path` are None for a shared (v1.2/v1.3) mailbox whose LATEST
    is missing; `metadata_path` is checked to stay inside the workspace when it is read,
    and the answer is only written while the mailbox stays inside `root` too.
    """

    workspace: str  # absolute, as found by the root glob (not resolved)
    directory: str  # absolute path of the interaction folder
    layout: Layout
    run_id: str | None
    metadata_path: str | None
    root: str | None = None  # the resolved fixed folder of the root the workspace was found under

    @property
    def request_path(self) -> str:
        return os.path.join(self.directory, REQUEST_FILE)

    @property
    def response_path(self) -> str:
        return os.path.join(self.directory, RESPONSE_FILE)


def is_safe_run_id(value: str) -> bool:
    """A run id usable as one path component (no separators, not `.` or `..`)."""
    return bool(_RUN_ID.match(value)) and value not in (".", "..")


def read_small(path: str, workspace: str, refused: dict[str, str] | None = None) -> str | None:
    """The stripped text of a small file (LATEST, VERSION) inside `workspace`, or None when
    it is missing or unusable; why it is unusable goes into `refused` (path → reason)."""
    try:
        data = read_bytes(path, workspace, _MAX_SMALL_FILE)
    except MailboxGone:
        return None
    except MailboxError as exc:
        if refused is not None:
            refused[path] = exc.reason
        return None
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        if refused is not None:
            refused[path] = "is not UTF-8 text; refused"
        return None


def latest_run(workspace: str, refused: dict[str, str] | None = None) -> tuple[Layout, str | None, str | None]:
    """For a shared mailbox: its layout, the latest run id and that run's metadata path
    (an unusable LATEST is named in `refused`)."""
    delta = os.path.join(workspace, DELTA_DIR)
    runs_latest = os.path.join(delta, RUNS_DIR, LATEST_FILE)
    run_id = read_small(runs_latest, workspace, refused)
    if run_id is not None:
        if not is_safe_run_id(run_id):
            if run_id and refused is not None:  # empty: being written
                refused[runs_latest] = "does not hold a usable run id; refused"
            return Layout.v1_2, None, None
        meta = os.path.join(delta, RUNS_DIR, run_id, "execution", METADATA_FILE)
        return Layout.v1_2, run_id, meta
    if os.path.isdir(os.path.join(delta, RUNS_DIR)):
        return Layout.v1_2, None, None
    latest = os.path.join(delta, LATEST_FILE)
    run_id = read_small(latest, workspace, refused)
    if run_id is None or not is_safe_run_id(run_id):
        if run_id and refused is not None:  # empty: being written
            refused[latest] = "does not hold a usable run id; refused"
        return Layout.v1_3, None, None
    return Layout.v1_3, run_id, os.path.join(delta, run_id, METADATA_FILE)


@dataclass
class Survey:
    """One look at a workspace: its mailboxes, the folders to watch, and what was refused
    (path → why: symlinks leading outside, folders that cannot be read, FIFOs...)."""

    mailboxes: list[Mailbox]
    watch: list[str]
    refused: dict[str, str] = field(default_factory=dict)

    @property
    def escaped(self) -> list[str]:
        return [path for path, why in self.refused.items() if "outside" in why]


OUTSIDE_WORKSPACE = "leads outside the workspace (symlink); refused"


class _Boundary:
    """Answers "is this symlink still inside the workspace (and its root)?", resolving them once."""

    def __init__(self, workspace: str, root: str | None) -> None:
        self.workspace = workspace
        self.root = root
        self._real: str | None = None

    def allows(self, path: str, is_link: bool) -> bool:
        # A real (non-link) entry inside a folder that is inside stays inside: no syscalls.
        if not is_link:
            return True
        if self._real is None:
            self._real = os.path.realpath(self.workspace)
        real = os.path.realpath(path)
        return within(real, self._real) and (self.root is None or within(real, self.root))


def _lstat_dir(path: str) -> tuple[bool, bool, str | None]:
    """(exists as a folder, is a symlink, why it cannot be looked at) for `path`."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return False, False, None if exc.errno in (errno.ENOENT, errno.ENOTDIR) else (exc.strerror or str(exc))
    if stat.S_ISLNK(st.st_mode):
        try:
            return stat.S_ISDIR(os.stat(path).st_mode), True, None
        except OSError:
            return False, True, None  # a dangling link: nothing there yet
    return stat.S_ISDIR(st.st_mode), False, None


def _small_file_refusal(entry: os.DirEntry[str], boundary: _Boundary) -> str | None:
    """Why `.delta/VERSION` or `.delta/LATEST` cannot be used, judged from the folder entry
    alone (no open): anything but a regular file inside the workspace."""
    try:
        if entry.is_file(follow_symlinks=False):
            return None
        if entry.is_symlink():
            if not boundary.allows(entry.path, True):
                return OUTSIDE_WORKSPACE
            if os.path.exists(entry.path) and not stat.S_ISREG(mode := os.stat(entry.path).st_mode):
                return f"leads to something that {not_regular(mode)[3:]}"
            return None
        return not_regular(entry.stat(follow_symlinks=False).st_mode)
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"


def survey(workspace: str, root: str | None = None) -> Survey:
    """Every mailbox of `workspace` whatever the engine version, the folders to watch (not
    recursively) to see new requests appear, and everything refused on the way: folders
    that lead outside the workspace (or `root`), cannot be read, or files where only a
    regular file will do. Costs a handful of syscalls when nothing is odd.

    Watched: the workspace (for `.delta` being created), `.delta/` (new runs, LATEST, a
    shared mailbox), each mailbox, and each run folder without a mailbox yet.
    """
    if not os.path.isabs(workspace):
        workspace = os.path.abspath(workspace)
    sep = os.sep
    boundary = _Boundary(workspace, root)
    delta = f"{workspace.rstrip(sep)}{sep}{DELTA_DIR}"
    result = Survey([], [workspace])
    refused = result.refused
    is_dir, is_link, problem = _lstat_dir(delta)
    if problem:
        refused[delta] = f"cannot be read: {problem} (check its owner and mode)"
    if not is_dir:
        return result
    if not boundary.allows(delta, is_link):
        refused[delta] = OUTSIDE_WORKSPACE
        return result
    result.watch.append(delta)
    runs: list[tuple[str, bool]] = []
    has_latest = False
    try:
        with os.scandir(delta) as entries:
            for entry in entries:
                name = entry.name
                if name in _SMALL_FILES:
                    has_latest = has_latest or name == LATEST_FILE
                    why = _small_file_refusal(entry, boundary)
                    if why:
                        refused[entry.path] = why
                    continue
                if name.startswith(".") or name in _NOT_RUNS or not is_safe_run_id(name):
                    continue
                try:
                    if entry.is_dir():
                        runs.append((name, entry.is_symlink()))
                except OSError:
                    continue
    except OSError as exc:
        refused[delta] = f"cannot be read: {exc.strerror or exc} (check its owner and mode)"
        return result
    runs.sort()
    shared = f"{delta}{sep}{INTERACTION}"
    is_dir, is_link, problem = _lstat_dir(shared)
    if problem:
        refused[shared] = f"cannot be read: {problem} (check its owner and mode)"
    elif is_dir:
        if boundary.allows(shared, is_link):
            layout, run_id, meta = latest_run(workspace, refused)
            result.mailboxes.append(Mailbox(workspace, shared, layout, run_id, meta, root))
            result.watch.append(shared)
        else:
            refused[shared] = OUTSIDE_WORKSPACE
    per_run_layout = Layout.v1_4 if has_latest else Layout.v1_10
    for name, run_is_link in runs:
        run = f"{delta}{sep}{name}"
        if not boundary.allows(run, run_is_link):
            refused[run] = "run folder leads outside the workspace (symlink); refused"
            continue
        directory = f"{run}{sep}{INTERACTION}"
        is_dir, is_link, problem = _lstat_dir(directory)
        if problem:
            refused[run] = f"cannot be read: {problem} (check its owner and mode)"
        elif not is_dir:
            result.watch.append(run)
        elif boundary.allows(directory, is_link or run_is_link):
            meta = f"{run}{sep}{METADATA_FILE}"
            result.mailboxes.append(Mailbox(workspace, directory, per_run_layout, name, meta, root))
            result.watch.append(directory)
        else:
            refused[directory] = OUTSIDE_WORKSPACE
    return result


def find_mailboxes(workspace: str) -> list[Mailbox]:
    """Every mailbox folder in `workspace` that stays inside it."""
    return survey(workspace).mailboxes


def escaped_mailboxes(workspace: str) -> list[str]:
    """Folders of `workspace` refused because they resolve outside it (to report)."""
    return survey(workspace).escaped


def watch_dirs(workspace: str) -> list[str]:
    """The folders to watch for `workspace` (see `survey`)."""
    return survey(workspace).watch
