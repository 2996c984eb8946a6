"""File events for a changing set of folders, through watchfiles' Rust notifier.

Each folder is watched on its own (not recursively: agents' workspaces hold anything,
and only a handful of folders per workspace matter). The set changes as workspaces and
runs come and go; see `DirWatcher` for how that stays cheap at thousands of folders.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable

from watchfiles._rust_notify import RustNotify

log = logging.getLogger("hitl_bridge.delta")

Changes = set[tuple[int, str]]


class _Thread:
    """One RustNotify and the thread that waits on it."""

    def __init__(self, notify: RustNotify, on_changes: Callable[[Changes], None], step_ms: int,
                 debounce_ms: int) -> None:
        self.notify = notify
        self.stop = threading.Event()
        self._on_changes = on_changes
        self._step_ms = step_ms
        self._debounce_ms = debounce_ms
        self.thread = threading.Thread(target=self._loop, name="delta-watch", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.is_set():
            try:
                # No stop_event: the GIL is then taken only once per timeout, not per step.
                result = self.notify.watch(self._debounce_ms, self._step_ms, WATCH_TIMEOUT_MS, None)
            except Exception:  # a watched folder vanished mid-call, or the notifier broke
                log.exception("delta: file watcher failed; the periodic rescan covers it")
                return
            if isinstance(result, set) and result and not self.stop.is_set():
                self._on_changes(result)
        with contextlib.suppress(Exception):
            self.notify.close()

    def close(self, wait: bool = False) -> None:
        """Stop; the thread ends within one watch timeout (0.2 s) unless `wait`."""
        self.stop.set()
        if wait:
            self.thread.join(timeout=2)


FRESH_MAX = 500
WATCH_TIMEOUT_MS = 200  # how soon a stopped watcher thread notices


def _start(paths: frozenset[str], on_changes: Callable[[Changes], None], step_ms: int, debounce_ms: int,
           force_polling: bool) -> tuple[_Thread | None, frozenset[str]]:
    """A watcher thread over `paths` (those that still exist), or None when there are none."""
    wanted = frozenset(p for p in paths if os.path.isdir(p))
    for _attempt in range(5):
        if not wanted:
            return None, wanted
        try:
            notify = RustNotify(sorted(wanted), False, force_polling, 300, False, True)
        except FileNotFoundError:  # one vanished since we listed it
            wanted = frozenset(p for p in wanted if os.path.isdir(p))
            continue
        except OSError as exc:  # e.g. inotify watch limit reached
            log.error("delta: cannot watch %d folders (%s); relying on the periodic rescan "
                      "(raise fs.inotify.max_user_watches)", len(wanted), exc)
            return None, frozenset()
        return _Thread(notify, on_changes, step_ms, debounce_ms), wanted
    return None, frozenset()


class DirWatcher:
    """Reports changes under a set of folders to `on_changes` (called from a thread).

    Building a notifier holds the GIL for about 13 µs per folder, so at 15,000 folders
    a rebuild would stall the event loop for 0.2 s. Folders are therefore kept in two
    notifiers: a large `base` rebuilt only by `compact()` (at start and on the periodic
    rescan), and a small `fresh` one for folders added since, rebuilt on every change.
    Folders that disappear simply stop producing events until the next compaction.
    """

    def __init__(self, on_changes: Callable[[Changes], None], *, step_ms: int = 3,
                 debounce_ms: int = 50, force_polling: bool = False) -> None:
        self._on_changes = on_changes
        self._step_ms = step_ms
        self._debounce_ms = debounce_ms
        self._force_polling = force_polling
        self._base: _Thread | None = None
        self._fresh: _Thread | None = None
        self.base_paths: frozenset[str] = frozenset()
        self.fresh_paths: frozenset[str] = frozenset()

    @property
    def paths(self) -> frozenset[str]:
        """Every folder being watched now."""
        return self.base_paths | self.fresh_paths

    def _new(self, paths: frozenset[str]) -> tuple[_Thread | None, frozenset[str]]:
        return _start(paths, self._on_changes, self._step_ms, self._debounce_ms, self._force_polling)

    def replace(self, paths: Iterable[str]) -> frozenset[str]:
        """Watch (at least) `paths` from now on; blocking, call it in a thread. The new
        notifier is live before the old one stops, so no event falls in between.
        Returns the set of folders watched."""
        wanted = frozenset(paths)
        fresh = wanted - self.base_paths
        if len(fresh) > FRESH_MAX or self._base is None:
            return self.compact(wanted)
        if fresh != self.fresh_paths:
            old = self._fresh
            self._fresh, self.fresh_paths = self._new(fresh)
            if old is not None:
                old.close()
        return self.paths

    def compact(self, paths: Iterable[str]) -> frozenset[str]:
        """Rebuild the large notifier with exactly `paths` and drop the small one."""
        wanted = frozenset(paths)
        if wanted == self.base_paths and self._fresh is None and self._base is not None:
            return self.paths
        old = (self._base, self._fresh)
        self._base, self.base_paths = self._new(wanted)
        self._fresh, self.fresh_paths = None, frozenset()
        for thread in old:
            if thread is not None:
                thread.close()
        return self.paths

    def tidy(self, paths: Iterable[str]) -> frozenset[str]:
        """Compact when it pays: folders were added since, or over 10 % are gone."""
        wanted = frozenset(paths)
        stale = len(self.base_paths - wanted)
        if self._fresh is not None or (wanted - self.base_paths) or stale > 0.1 * len(self.base_paths):
            return self.compact(wanted)
        return self.paths

    def close(self) -> None:
        for thread in (self._base, self._fresh):
            if thread is not None:
                thread.close(wait=True)
        self._base = self._fresh = None
        self.base_paths = self.fresh_paths = frozenset()
