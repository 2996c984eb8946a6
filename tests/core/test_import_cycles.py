"""No import cycles inside an adapter package.

Every `adapters/<name>/` package is read with `ast` (nothing is imported): each module's
imports of its own package's modules, at any depth (top level, inside functions, under
`TYPE_CHECKING`), make the package's import graph, which must have no cycle. A module
that needs its sibling only "for typing" still reaches back into it: give it a narrow
interface (a Protocol) instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ADAPTERS = Path(__file__).resolve().parents[2] / "adapters"
PACKAGES = sorted(p.parent.name for p in ADAPTERS.glob("*/__init__.py"))


def module_names(package: Path) -> dict[str, Path]:
    """Dotted name → file, for every module of the package (`__init__` is the package)."""
    root = package.parent.parent
    names = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imported(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `path` (module `name`) imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        found |= {t for t in targets if t in modules and t != name}
    return found


def graph(package: Path) -> dict[str, set[str]]:
    modules = module_names(package)
    return {name: imported(path, name, modules) for name, path in modules.items()}


def cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import cycle (its modules in order, the first repeated at the end), or []."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for start in sorted(edges):
        if start not in state and (found := visit(start)):
            return found
    return []


def test_the_check_finds_a_cycle(tmp_path: Path) -> None:
    """The check itself: a cycle through a `TYPE_CHECKING` import, a relative import and a
    function-level import is found; a package importing its modules in one direction is not."""
    package = tmp_path / "adapters" / "demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("def build():\n    from adapters.demo.channel import Channel\n")
    (package / "channel.py").write_text("from adapters.demo import handlers\nfrom .render import text\n")
    (package / "render.py").write_text("def text() -> str:\n    return ''\n")
    (package / "handlers.py").write_text("def f() -> None:\n    from adapters.demo import render\n")
    assert cycle(graph(package)) == []
    (package / "handlers.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .channel import Channel\n")
    assert cycle(graph(package)) == ["adapters.demo.channel", "adapters.demo.handlers", "adapters.demo.channel"]


def test_every_adapter_package_is_found() -> None:
    assert {"email", "slack", "telegram", "web"} <= set(PACKAGES)


@pytest.mark.parametrize("name", PACKAGES)
def test_no_import_cycle_inside_an_adapter(name: str) -> None:
    found = cycle(graph(ADAPTERS / name))
    assert not found, f"import cycle inside adapters/{name}: " + " → ".join(found)


@pytest.mark.parametrize(("name", "listeners"), [
    ("slack", ("interactions", "home", "doctor", "copies", "sender", "receiver", "port")),
    ("telegram", ("handlers", "sessions", "pending", "answers", "sender", "receiver", "doctor")),
])
def test_handlers_never_see_the_channel(name: str, listeners: tuple[str, ...]) -> None:
    """Handlers get a narrow interface (a Protocol), never the channel object."""
    edges = graph(ADAPTERS / name)
    for listener in listeners:
        assert f"adapters.{name}.channel" not in edges[f"adapters.{name}.{listener}"], listener
