"""The two-tier folder watcher: new folders go to a small notifier, rescans fold them in."""

from __future__ import annotations

import threading
from pathlib import Path

from adapters.delta.watcher import FRESH_MAX, Changes, DirWatcher


class Seen:
    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.event = threading.Event()

    def __call__(self, changes: Changes) -> None:
        self.paths.update(path for _, path in changes)
        self.event.set()

    def wait_for(self, path: Path) -> bool:
        for _ in range(200):  # up to 10 s, woken by each batch of events
            if str(path) in self.paths:
                return True
            self.event.wait(0.05)
            self.event.clear()
        return False


def test_added_folders_are_watched_without_rebuilding_the_large_notifier(tmp_path: Path) -> None:
    dirs = [tmp_path / f"d{i}" for i in range(3)]
    for d in dirs:
        d.mkdir()
    seen = Seen()
    watcher = DirWatcher(seen)
    try:
        watcher.replace(str(d) for d in dirs[:2])
        base = watcher.base_paths
        assert base == {str(dirs[0]), str(dirs[1])}
        (dirs[0] / "request.json").write_text("{}")
        assert seen.wait_for(dirs[0] / "request.json")
        watcher.replace(str(d) for d in dirs)
        assert watcher.base_paths == base  # unchanged
        assert watcher.fresh_paths == {str(dirs[2])}
        (dirs[2] / "request.json").write_text("{}")
        assert seen.wait_for(dirs[2] / "request.json")
        watcher.tidy(str(d) for d in dirs)
        assert watcher.base_paths == {str(d) for d in dirs} and not watcher.fresh_paths
        (dirs[1] / "again.json").write_text("{}")
        assert seen.wait_for(dirs[1] / "again.json")
    finally:
        watcher.close()


def test_many_new_folders_trigger_a_compaction(tmp_path: Path) -> None:
    first = tmp_path / "first"
    first.mkdir()
    watcher = DirWatcher(Seen())
    try:
        watcher.replace([str(first)])
        many = [tmp_path / f"n{i}" for i in range(FRESH_MAX + 1)]
        for d in many:
            d.mkdir()
        watcher.replace([str(first), *map(str, many)])
        assert len(watcher.base_paths) == FRESH_MAX + 2 and not watcher.fresh_paths
    finally:
        watcher.close()


def test_vanished_folders_are_skipped(tmp_path: Path) -> None:
    watcher = DirWatcher(Seen())
    try:
        (tmp_path / "here").mkdir()
        watched = watcher.replace([str(tmp_path / "here"), str(tmp_path / "gone")])
        assert watched == {str(tmp_path / "here")}
    finally:
        watcher.close()
