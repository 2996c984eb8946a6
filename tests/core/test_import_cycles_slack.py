"""No import cycle inside an adapter package: each module's imports of its siblings
(including those under `if TYPE_CHECKING:` and inside functions) form a DAG."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def package_imports(package: Path) -> dict[str, set[str]]:
    """Module name → the sibling modules of `package` it imports, anywhere in its code."""
    dotted = ".".join(package.relative_to(ROOT).parts)
    modules = {f"{dotted}.{p.stem}" if p.stem != "__init__" else dotted: p for p in package.glob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        here = name if path.stem == "__init__" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            found: list[str] = []
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                    base = f"{parent}.{base}" if base else parent
                found = [base] + [f"{base}.{alias.name}" for alias in node.names]
            graph[name] |= {m for m in found if m in modules and m != name and m != dotted}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each module that is on one (depth-first, as paths)."""
    found: list[list[str]] = []
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                found.append([*path[path.index(nxt):], nxt])
            elif nxt not in done:
                visit(nxt, [*path, nxt])
        done.add(node)

    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    return found


def test_the_cycle_finder_reads_imports_and_finds_cycles() -> None:
    package = ROOT / "adapters" / "slack"
    graph = package_imports(package)
    assert "adapters.slack.blocks" in graph["adapters.slack.interactions"]  # it reads imports
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_slack_adapter_has_no_import_cycle() -> None:
    assert cycles(package_imports(ROOT / "adapters" / "slack")) == []


def test_slack_listeners_never_see_the_channel() -> None:
    graph = package_imports(ROOT / "adapters" / "slack")
    for listener in ("interactions", "home", "doctor", "copies", "sender", "receiver", "port"):
        assert "adapters.slack.channel" not in graph[f"adapters.slack.{listener}"], listener
