"""What the agent sees: the downstream servers' tools and prompts under the names the
gateway lists them by, and which server (and which name there) each listed name is
(pure functions, no I/O).

A server with a `prefix` lists `<prefix>__<name>`; without one, names pass as they are.
When two servers list the same name, the first server in the config keeps it and the
other's is left out (`Collision`): the agent never calls one server's tool thinking it is
another's. The fix is a `prefix` on one of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from mcp_types import Prompt, Tool

from adapters.gateway.settings import ServerSettings

T = TypeVar("T", Tool, Prompt)


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A listed name: the server it belongs to, its name there, and what the server said of it."""

    server: ServerSettings
    name: str
    item: T


@dataclass(frozen=True)
class Collision:
    name: str
    kept: str  # the server keeping the name
    left_out: str  # the server whose item is not listed

    def __str__(self) -> str:
        return (f"{self.left_out!r} also lists {self.name!r}, which {self.kept!r} keeps: set `prefix` on one "
                "of them to list both")


@dataclass
class Catalog(Generic[T]):
    """Listed name → entry, in listing order."""

    entries: dict[str, Entry[T]] = field(default_factory=dict)
    collisions: list[Collision] = field(default_factory=list)

    def listed(self) -> list[T]:
        """The items as the agent sees them (renamed where a prefix applies)."""
        return [entry.item.model_copy(update={"name": name}) for name, entry in self.entries.items()]

    def find(self, name: str) -> Entry[T] | None:
        return self.entries.get(name)


def merge(listings: Iterable[tuple[ServerSettings, Sequence[T]]]) -> Catalog[T]:
    """One catalog from each server's listing, in the config's server order."""
    catalog: Catalog[T] = Catalog()
    for server, items in listings:
        for item in items:
            listed = f"{server.tool_prefix}{item.name}"
            kept = catalog.entries.get(listed)
            if kept is not None:
                catalog.collisions.append(Collision(listed, kept.server.name, server.name))
                continue
            catalog.entries[listed] = Entry(server, item.name, item)
    return catalog
