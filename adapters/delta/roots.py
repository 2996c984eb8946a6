"""Expanding `roots:` globs into workspaces, and the folders that reveal new ones.

A pattern is matched one path component at a time (`*`, `?`, `[…]` like the shell;
`*` does not match names starting with a dot). Every folder the expansion walks
through on the way to a workspace is returned too: watching those (not recursively)
is enough to see a new workspace appear anywhere the pattern allows. When the fixed
part of a pattern (`/srv/agents` in `/srv/agents/*/workspaces/*`) does not exist yet,
its deepest existing ancestor is watched instead, so it is seen as soon as it appears.

The fixed part is the operator's; everything matched below it is the agents'. A matched
folder that is a symlink leading outside the fixed part is refused, so nobody who can
write into an agent folder can make the bridge write answers elsewhere.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from dataclasses import dataclass, field

from adapters.delta.files import within


@dataclass(frozen=True)
class MissingRoot:
    """A pattern whose fixed part does not exist (yet): `watching` is where it will appear."""

    pattern: str
    folder: str
    watching: str

    def describe(self) -> str:
        return f"root {self.pattern!r}: {self.folder} does not exist yet (watching {self.watching} for it)"


@dataclass
class Expansion:
    """Workspaces found (absolute, in pattern order, each real folder once), the folders
    walked through to find them (`parents`), the resolved fixed folder each workspace was
    found under, matches refused (path → why), and patterns whose fixed part is missing
    (each with the ancestor to watch for it)."""

    workspaces: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)
    roots: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    missing: list[MissingRoot] = field(default_factory=list)

    @property
    def watch(self) -> list[str]:
        """Every folder whose changes can reveal a new workspace: the parents, and the
        ancestors where missing roots will appear."""
        return list(dict.fromkeys([*self.parents, *(m.watching for m in self.missing)]))


def _split(path: str) -> list[str]:
    parts = []
    head = path
    while True:
        head, tail = os.path.split(head)
        if tail:
            parts.append(tail)
        else:
            parts.append(head)
            break
    parts.reverse()
    return parts


def _matching_dirs(directory: str, pattern: str) -> list[tuple[str, bool]]:
    """(path, is a symlink) of the folders in `directory` whose name matches `pattern`."""
    hidden_ok = pattern.startswith(".")
    found = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.startswith(".") and not hidden_ok:
                    continue
                if not fnmatch.fnmatchcase(entry.name, pattern):
                    continue
                try:
                    if entry.is_dir():
                        found.append((entry.path, entry.is_symlink()))
                except OSError:
                    continue
    except OSError:
        return []
    found.sort()
    return found


def deepest_existing(path: str) -> str:
    """`path` itself when it is a folder, else its closest ancestor that is one."""
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _outside(path: str, fixed: str, fixed_real: str) -> str | None:
    """Why the symlinked folder `path` is refused, or None when it stays inside `fixed_real`."""
    real = os.path.realpath(path)
    if within(real, fixed_real):
        return None
    return (f"leads outside the root folder {fixed} (a symlink to {real}); refused "
            "(to watch that folder, add it to `roots` itself)")


def expand_one(pattern: str, cwd: str) -> Expansion:
    """The workspaces `pattern` matches now (relative patterns are taken from `cwd`)."""
    path = os.path.normpath(os.path.join(cwd, os.path.expanduser(pattern)))
    parts = _split(path)
    result = Expansion()
    first_magic = next((i for i, p in enumerate(parts) if glob.has_magic(p)), None)
    fixed = path if first_magic is None else os.path.join(*parts[:first_magic])
    if not os.path.isdir(fixed):  # not there yet: watch where it will appear
        result.missing.append(MissingRoot(pattern, fixed, deepest_existing(os.path.dirname(fixed))))
        return result
    fixed_real = os.path.realpath(fixed)
    if first_magic is None:
        result.workspaces.append(path)
        result.roots[path] = fixed_real
        return result
    level = [fixed]
    for index in range(first_magic, len(parts)):
        part = parts[index]
        following: list[str] = []
        for directory in level:
            if not os.path.isdir(directory):
                continue
            result.parents.append(directory)
            if glob.has_magic(part):
                candidates = _matching_dirs(directory, part)
            else:
                candidate = os.path.join(directory, part)
                candidates = [(candidate, os.path.islink(candidate))] if os.path.isdir(candidate) else []
            for candidate, is_link in candidates:
                why = _outside(candidate, fixed, fixed_real) if is_link else None
                if why:
                    result.refused[candidate] = why
                else:
                    following.append(candidate)
        level = following
    result.workspaces.extend(level)
    result.roots.update((workspace, fixed_real) for workspace in level)
    return result


def expand(patterns: list[str], cwd: str) -> Expansion:
    """All patterns together: each real folder once (the first path that reached it)."""
    total = Expansion()
    seen: set[tuple[int, int]] = set()
    seen_parents: set[str] = set()
    for pattern in patterns:
        one = expand_one(pattern, cwd)
        for workspace in one.workspaces:
            try:
                st = os.stat(workspace)
            except OSError:
                continue
            identity = (st.st_dev, st.st_ino)  # the same folder reached by two paths counts once
            if identity not in seen:
                seen.add(identity)
                total.workspaces.append(workspace)
                total.roots[workspace] = one.roots[workspace]
        for parent in one.parents:
            if parent not in seen_parents:
                seen_parents.add(parent)
                total.parents.append(parent)
        total.refused.update(one.refused)
        total.missing.extend(one.missing)
    return total
