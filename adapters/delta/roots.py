"""Expanding `roots:` globs into workspaces, and the folders that reveal new ones.

A pattern is matched one path component at a time (`*`, `?`, `[…]` like the shell;
`*` does not match names starting with a dot). Every folder the expansion walks
through on the way to a workspace is returned too: watching those (not recursively)
is enough to see a new workspace appear anywhere the pattern allows.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from dataclasses import dataclass, field


@dataclass
class Expansion:
    """Workspaces found (absolute, in pattern order, each real folder once) and the
    intermediate folders to watch for new ones."""

    workspaces: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)


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


def _matching_dirs(directory: str, pattern: str) -> list[str]:
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
                        found.append(entry.path)
                except OSError:
                    continue
    except OSError:
        return []
    found.sort()
    return found


def expand_one(pattern: str, cwd: str) -> Expansion:
    """The workspaces `pattern` matches now (relative patterns are taken from `cwd`)."""
    path = os.path.normpath(os.path.join(cwd, os.path.expanduser(pattern)))
    parts = _split(path)
    result = Expansion()
    first_magic = next((i for i, p in enumerate(parts) if glob.has_magic(p)), None)
    if first_magic is None:
        if os.path.isdir(path):
            result.workspaces.append(path)
        else:  # not there yet: watch where it will appear
            parent = os.path.dirname(path)
            if os.path.isdir(parent) and parent != path:
                result.parents.append(parent)
        return result
    level = [os.path.join(*parts[:first_magic])]
    for index in range(first_magic, len(parts)):
        part = parts[index]
        last = index == len(parts) - 1
        following: list[str] = []
        for directory in level:
            if not os.path.isdir(directory):
                continue
            result.parents.append(directory)
            if glob.has_magic(part):
                following.extend(_matching_dirs(directory, part))
            else:
                candidate = os.path.join(directory, part)
                if os.path.isdir(candidate):
                    following.append(candidate)
        level = following
        if last:
            result.workspaces.extend(level)
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
        for parent in one.parents:
            if parent not in seen_parents:
                seen_parents.add(parent)
                total.parents.append(parent)
    return total
