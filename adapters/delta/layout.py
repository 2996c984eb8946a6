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

import os
import re
import stat
from dataclasses import dataclass
from enum import StrEnum

DELTA_DIR = ".delta"
INTERACTION = "interaction"
REQUEST_FILE = "request.json"
RESPONSE_FILE = "response.txt"
METADATA_FILE = "metadata.json"
LATEST_FILE = "LATEST"
RUNS_DIR = "runs"

# Names inside `.delta/` that are never run directories.
_NOT_RUNS = frozenset({"VERSION", LATEST_FILE, INTERACTION, RUNS_DIR})
_RUN_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
_MAX_SMALL_FILE = 4096


class Layout(StrEnum):
    v1_2 = "v1.2"
    v1_3 = "v1.3"
    v1_4 = "v1.4"
    v1_10 = "v1.10"


class OutsideWorkspace(Exception):
    """A path leads (through a symlink) outside the workspace it belongs to."""

    def __init__(self, path: str, workspace: str) -> None:
        super().__init__(f"{path}: leads outside the workspace {workspace} (symlink?); refused")
        self.path = path
        self.workspace = workspace


@dataclass(frozen=True)
class Mailbox:
    """One `interaction/` folder: where `request.json` appears and `response.txt` goes.

    `run_id` and `metadata_path` are None for a shared (v1.2/v1.3) mailbox whose LATEST
    is missing; `metadata_path` is checked to stay inside the workspace when it is read.
    """

    workspace: str  # absolute, as found by the root glob (not resolved)
    directory: str  # absolute path of the interaction folder
    layout: Layout
    run_id: str | None
    metadata_path: str | None

    @property
    def request_path(self) -> str:
        return os.path.join(self.directory, REQUEST_FILE)

    @property
    def response_path(self) -> str:
        return os.path.join(self.directory, RESPONSE_FILE)


def is_safe_run_id(value: str) -> bool:
    """A run id usable as one path component (no separators, not `.` or `..`)."""
    return bool(_RUN_ID.match(value)) and value not in (".", "..")


def inside(path: str, workspace_real: str) -> bool:
    """True when `path`, with every symlink resolved, is `workspace_real` or below it."""
    real = os.path.realpath(path)
    return real == workspace_real or real.startswith(workspace_real.rstrip(os.sep) + os.sep)


def confined(path: str, workspace: str) -> str:
    """`path` resolved, or OutsideWorkspace when it escapes `workspace`."""
    workspace_real = os.path.realpath(workspace)
    real = os.path.realpath(path)
    if not (real == workspace_real or real.startswith(workspace_real.rstrip(os.sep) + os.sep)):
        raise OutsideWorkspace(path, workspace)
    return real


def read_small(path: str, workspace: str) -> str | None:
    """The stripped text of a small file (LATEST, VERSION) inside `workspace`, or None."""
    try:
        real = confined(path, workspace)
        with open(real, "rb") as f:
            data = f.read(_MAX_SMALL_FILE + 1)
    except (OSError, OutsideWorkspace):
        return None
    if len(data) > _MAX_SMALL_FILE:
        return None
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None


def latest_run(workspace: str) -> tuple[Layout, str | None, str | None]:
    """For a shared mailbox: its layout, the latest run id and that run's metadata path."""
    delta = os.path.join(workspace, DELTA_DIR)
    runs_latest = os.path.join(delta, RUNS_DIR, LATEST_FILE)
    run_id = read_small(runs_latest, workspace)
    if run_id is not None:
        if not is_safe_run_id(run_id):
            return Layout.v1_2, None, None
        meta = os.path.join(delta, RUNS_DIR, run_id, "execution", METADATA_FILE)
        return Layout.v1_2, run_id, meta
    if os.path.isdir(os.path.join(delta, RUNS_DIR)):
        return Layout.v1_2, None, None
    run_id = read_small(os.path.join(delta, LATEST_FILE), workspace)
    if run_id is None or not is_safe_run_id(run_id):
        return Layout.v1_3, None, None
    return Layout.v1_3, run_id, os.path.join(delta, run_id, METADATA_FILE)


def run_dirs(workspace: str) -> list[str]:
    """Names of the per-run folders in `.delta/` (skips VERSION, LATEST, dotfiles, files)."""
    delta = os.path.join(workspace, DELTA_DIR)
    names: list[str] = []
    try:
        with os.scandir(delta) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith(".") or name in _NOT_RUNS or not is_safe_run_id(name):
                    continue
                try:
                    if entry.is_dir():
                        names.append(name)
                except OSError:
                    continue
    except OSError:
        return []
    names.sort()
    return names


@dataclass
class Survey:
    """One look at a workspace: its mailboxes, the folders to watch, and refused symlinks."""

    mailboxes: list[Mailbox]
    watch: list[str]
    escaped: list[str]


class _Boundary:
    """Answers "is this symlink still inside the workspace?", resolving the workspace once."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self._real: str | None = None

    def allows(self, path: str, is_link: bool) -> bool:
        # A real (non-link) entry inside a folder that is inside stays inside: no syscalls.
        if not is_link:
            return True
        if self._real is None:
            self._real = os.path.realpath(self.workspace)
        return inside(path, self._real)


def _lstat_dir(path: str) -> tuple[bool, bool]:
    """(exists as a folder, is a symlink) for `path`, with one lstat (and a stat for links)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False, False
    if stat.S_ISLNK(st.st_mode):
        return os.path.isdir(path), True
    return stat.S_ISDIR(st.st_mode), False


def survey(workspace: str) -> Survey:
    """Every mailbox of `workspace` whatever the engine version, the folders to watch (not
    recursively) to see new requests appear, and mailbox folders refused because they
    lead outside the workspace. Costs a handful of syscalls when nothing is a symlink.

    Watched: the workspace (for `.delta` being created), `.delta/` (new runs, LATEST, a
    shared mailbox), each mailbox, and each run folder without a mailbox yet.
    """
    if not os.path.isabs(workspace):
        workspace = os.path.abspath(workspace)
    sep = os.sep
    boundary = _Boundary(workspace)
    delta = f"{workspace.rstrip(sep)}{sep}{DELTA_DIR}"
    result = Survey([], [workspace], [])
    is_dir, is_link = _lstat_dir(delta)
    if not is_dir:
        return result
    if not boundary.allows(delta, is_link):
        result.escaped.append(delta)
        return result
    result.watch.append(delta)
    runs: list[tuple[str, bool]] = []
    has_latest = False
    try:
        with os.scandir(delta) as entries:
            for entry in entries:
                name = entry.name
                if name == LATEST_FILE:
                    has_latest = True
                if name.startswith(".") or name in _NOT_RUNS or not is_safe_run_id(name):
                    continue
                try:
                    if entry.is_dir():
                        runs.append((name, entry.is_symlink()))
                except OSError:
                    continue
    except OSError:
        return result
    runs.sort()
    shared = f"{delta}{sep}{INTERACTION}"
    is_dir, is_link = _lstat_dir(shared)
    if is_dir:
        if boundary.allows(shared, is_link):
            layout, run_id, meta = latest_run(workspace)
            result.mailboxes.append(Mailbox(workspace, shared, layout, run_id, meta))
            result.watch.append(shared)
        else:
            result.escaped.append(shared)
    per_run_layout = Layout.v1_4 if has_latest else Layout.v1_10
    for name, run_is_link in runs:
        run = f"{delta}{sep}{name}"
        if not boundary.allows(run, run_is_link):
            continue
        directory = f"{run}{sep}{INTERACTION}"
        is_dir, is_link = _lstat_dir(directory)
        if not is_dir:
            result.watch.append(run)
        elif boundary.allows(directory, is_link or run_is_link):
            meta = f"{run}{sep}{METADATA_FILE}"
            result.mailboxes.append(Mailbox(workspace, directory, per_run_layout, name, meta))
            result.watch.append(directory)
        else:
            result.escaped.append(directory)
    return result


def find_mailboxes(workspace: str) -> list[Mailbox]:
    """Every mailbox folder in `workspace` that stays inside it."""
    return survey(workspace).mailboxes


def escaped_mailboxes(workspace: str) -> list[str]:
    """Mailbox folders of `workspace` that resolve outside it (to log and refuse)."""
    return survey(workspace).escaped


def watch_dirs(workspace: str) -> list[str]:
    """The folders to watch for `workspace` (see `survey`)."""
    return survey(workspace).watch
