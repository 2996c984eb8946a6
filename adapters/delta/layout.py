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


def find_mailboxes(workspace: str) -> list[Mailbox]:
    """Every mailbox folder that exists in `workspace`, whatever the engine version.

    A mailbox whose folder resolves outside the workspace is left out (see
    `escaped_mailboxes` to report it).
    """
    workspace = os.path.abspath(workspace)
    delta = os.path.join(workspace, DELTA_DIR)
    if not os.path.isdir(delta):
        return []
    workspace_real = os.path.realpath(workspace)
    found: list[Mailbox] = []
    shared = os.path.join(delta, INTERACTION)
    if os.path.isdir(shared) and inside(shared, workspace_real):
        layout, run_id, meta = latest_run(workspace)
        found.append(Mailbox(workspace, shared, layout, run_id, meta))
    has_latest = os.path.exists(os.path.join(delta, LATEST_FILE))
    per_run_layout = Layout.v1_4 if has_latest else Layout.v1_10
    for name in run_dirs(workspace):
        directory = os.path.join(delta, name, INTERACTION)
        if os.path.isdir(directory) and inside(directory, workspace_real):
            meta = os.path.join(delta, name, METADATA_FILE)
            found.append(Mailbox(workspace, directory, per_run_layout, name, meta))
    return found


def escaped_mailboxes(workspace: str) -> list[str]:
    """Mailbox folders of `workspace` that resolve outside it (to log and refuse)."""
    workspace = os.path.abspath(workspace)
    delta = os.path.join(workspace, DELTA_DIR)
    workspace_real = os.path.realpath(workspace)
    candidates = [os.path.join(delta, INTERACTION)]
    candidates += [os.path.join(delta, n, INTERACTION) for n in run_dirs(workspace)]
    return [c for c in candidates if os.path.isdir(c) and not inside(c, workspace_real)]


def watch_dirs(workspace: str) -> list[str]:
    """The folders to watch (not recursively) to see every request of `workspace` appear.

    The workspace itself (for `.delta` being created), `.delta/` (new runs, LATEST, a
    shared mailbox), each existing mailbox, and each run folder without one yet.
    """
    workspace = os.path.abspath(workspace)
    delta = os.path.join(workspace, DELTA_DIR)
    if not os.path.isdir(delta):
        return [workspace]
    workspace_real = os.path.realpath(workspace)
    if not inside(delta, workspace_real):
        return [workspace]
    dirs = [workspace, delta]
    shared = os.path.join(delta, INTERACTION)
    if os.path.isdir(shared) and inside(shared, workspace_real):
        dirs.append(shared)
    for name in run_dirs(workspace):
        run = os.path.join(delta, name)
        interaction = os.path.join(run, INTERACTION)
        if os.path.isdir(interaction):
            if inside(interaction, workspace_real):
                dirs.append(interaction)
        elif inside(run, workspace_real):
            dirs.append(run)
    return dirs
