"""Reading the config file's YAML within bounds: its size, and what its aliases expand to.

YAML aliases (`*name`) repeat an anchored value without copying it, so a 1 KB document can
describe billions of values ("billion laughs"): the parser is fast, but everything that
walks the result afterwards (`${ENV}` substitution, validation) is not. The document is
composed into nodes first, its expanded size is counted over the node graph (each node
once), and only a document within MAX_VALUES is built into Python values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

#: the largest config file read (a real one is a few KB)
MAX_BYTES = 1024 * 1024
#: the most values (scalars, lists, mappings) a document may expand to, aliases included
MAX_VALUES = 100_000


class YamlLimit(ValueError):
    """The file is too large, or its aliases expand too far (message says which and why)."""


def read_bounded(path: Path) -> str:
    """The file's text; YamlLimit past MAX_BYTES. Reads at most MAX_BYTES + 1 bytes, so a
    huge file (or a pipe that never ends) costs no more than that."""
    with path.open("rb") as stream:
        data = stream.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise YamlLimit(f"the file is larger than {MAX_BYTES // 1024} KB (a config is a few KB; is it the right file?)")
    return data.decode("utf-8")


def load_bounded(text: str) -> Any:
    """`yaml.safe_load(text)`, refusing a document that expands to more than MAX_VALUES
    values or refers to itself (YamlLimit); yaml.YAMLError for bad YAML as usual."""
    if len(text) > MAX_BYTES:
        raise YamlLimit(f"the document is larger than {MAX_BYTES // 1024} KB")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded = expanded_size(node)
        if expanded > MAX_VALUES:
            raise YamlLimit(f"its aliases (*name) expand to more than {MAX_VALUES:,} values (an alias bomb?): "
                            "write the values out, or use fewer aliases")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def expanded_size(root: yaml.Node) -> int:
    """How many values `root` stands for once every alias is expanded, counting each node
    once however often it is referred to (a memo on the node), without recursion. Past
    MAX_VALUES the count stops growing; a node that contains itself raises YamlLimit."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            size[key] = min(MAX_VALUES + 1, 1 + sum(size[id(c)] for c in _children(node)))
            continue
        if key in size:
            continue
        if key in on_path:
            raise YamlLimit("an alias refers to a value that contains it (a recursive anchor)")
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise YamlLimit("an alias refers to a value that contains it (a recursive anchor)")
            if id(child) not in size:
                stack.append((child, False))
    return size[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
