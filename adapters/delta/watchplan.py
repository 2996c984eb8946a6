"""Which folders the Delta source watches, and whom a change in each one concerns.

Each watched folder belongs to a workspace (its `.delta/`, mailboxes and run folders) or
to the roots (folders on the way to workspaces, and the deepest existing ancestor of a
root whose fixed folder is missing). A change in a workspace's folder means "look at that
workspace again"; a change in a roots folder means "expand the roots again", except in an
ancestor watched only for a missing root, where only a change on the way to it counts
(watching /home for /home/ci/runs must not re-expand every root on every change in /home).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from adapters.delta.roots import Expansion


@dataclass
class Marks:
    """What a batch of changed paths calls for."""

    roots: bool = False
    workspaces: set[str] = field(default_factory=set)


class WatchPlan:
    """The folders to watch (`folders`) and what each one's changes mean (`mark`)."""

    def __init__(self) -> None:
        self._owner: dict[str, str | None] = {}  # watched folder → workspace (None: the roots')
        self._roots_folders: list[str] = []
        self._walked: set[str] = set()  # folders on the way to existing workspaces
        self._awaiting: dict[str, list[str]] = {}  # watched ancestor → missing root folders below it
        self._by_workspace: dict[str, list[str]] = {}
        self.stale = False  # the watcher must be told

    @property
    def folders(self) -> list[str]:
        return list(self._owner)

    def set_roots(self, expansion: Expansion) -> None:
        self._walked = set(expansion.parents)
        self._awaiting = {}
        for missing in expansion.missing:
            self._awaiting.setdefault(missing.watching, []).append(missing.folder)
        watch = expansion.watch
        if watch == self._roots_folders:
            return
        for folder in self._roots_folders:
            if folder in self._owner and self._owner[folder] is None:
                del self._owner[folder]
        for folder in watch:
            self._owner.setdefault(folder, None)
        self._roots_folders = watch
        self.stale = True

    def set_workspace(self, workspace: str, folders: list[str]) -> None:
        """`workspace`'s folders to watch now (empty: it is gone)."""
        previous = self._by_workspace.get(workspace, [])
        if previous == folders:
            return
        for folder in previous:
            if self._owner.get(folder) == workspace:
                del self._owner[folder]
        for folder in folders:
            self._owner.setdefault(folder, workspace)
        if folders:
            self._by_workspace[workspace] = folders
        else:
            self._by_workspace.pop(workspace, None)
        self.stale = True

    def mark(self, paths: Iterable[str], marks: Marks | None = None) -> Marks:
        """What the changes at `paths` (files or folders) call for."""
        marks = marks or Marks()
        for path in paths:
            directory = os.path.dirname(path)
            owner = self._owner.get(directory, "")
            if owner == "":
                owner = self._owner.get(path, "")
            if owner is None:
                if directory in self._awaiting and not self._leads_to_missing(directory, path):
                    continue
                marks.roots = True
            elif owner:
                marks.workspaces.add(owner)
        return marks

    def newly_watched(self, added: Iterable[str]) -> Marks:
        """Folders whose watch just started may have changed before it did: look again."""
        marks = Marks()
        for folder in added:
            owner = self._owner.get(folder, "")
            if owner is None:
                marks.roots = True
            elif owner:
                marks.workspaces.add(owner)
        return marks

    def _leads_to_missing(self, directory: str, path: str) -> bool:
        if directory in self._walked:
            return True
        prefix = path.rstrip(os.sep) + os.sep
        return any(folder == path or folder.startswith(prefix) for folder in self._awaiting[directory])
