"""Expanding `roots:` globs: workspaces now, and the folders that reveal new ones."""

from __future__ import annotations

from pathlib import Path

from adapters.delta.roots import expand


def test_glob_levels_and_parents(tmp_path: Path) -> None:
    for path in ("agents/a1/workspaces/W001", "agents/a1/workspaces/W002", "agents/a2/workspaces/X1",
                 "agents/a3", "agents/.hidden/workspaces/W9"):
        (tmp_path / path).mkdir(parents=True)
    found = expand([str(tmp_path / "agents" / "*" / "workspaces" / "W*")], "/")
    assert found.workspaces == [str(tmp_path / "agents/a1/workspaces/W001"),
                                str(tmp_path / "agents/a1/workspaces/W002")]
    # Every folder on the way is watched, so a new agent or workspace anywhere is seen.
    assert str(tmp_path / "agents") in found.parents
    assert str(tmp_path / "agents" / "a3") in found.parents
    assert str(tmp_path / "agents" / "a2" / "workspaces") in found.parents
    assert not any(".hidden" in p for p in found.parents + found.workspaces)


def test_overlapping_roots_and_symlinks_count_once(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "ws")
    found = expand([str(tmp_path / "ws"), str(tmp_path / "*"), "alias"], str(tmp_path))
    assert found.workspaces == [str(tmp_path / "ws")]


def test_relative_root_and_missing_workspace(tmp_path: Path) -> None:
    assert expand(["."], str(tmp_path)).workspaces == [str(tmp_path)]
    later = expand(["later"], str(tmp_path))
    assert later.workspaces == []
    assert later.watch == [str(tmp_path)]  # watched, to see it appear
    assert expand([str(tmp_path / "nowhere" / "*")], "/").workspaces == []
