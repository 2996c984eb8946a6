"""Adapters by name: the config says `type: delta` or has a channel's section (`slack:`);
this maps those names to factories, so the core never imports adapter code directly.
Channels declare their own name and factory in their spec (bridge.specs).

A factory is `build(section: dict, ctx: AdapterContext) -> Source | Channel`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bridge.config import Settings
from bridge.errors import ConfigError
from bridge.logs import quiet_libraries
from bridge.ports import Channel, Clock, Source
from bridge.specs import channel_specs, identity_specs
from bridge.store.base import Store

SOURCES: dict[str, str] = {
    "webhook": "adapters.webhook:build_source",
    "delta": "adapters.delta:build_source",
    "langgraph": "adapters.langgraph:build_source",
    "teal": "adapters.teal:build_source",
    "mastra": "adapters.mastra:build_source",
    "agentworld": "adapters.agentworld:build_source",
    "mcp": "adapters.mcp.source:build_source",
    "gateway": "adapters.gateway.source:build_source",
    "temporal": "adapters.temporal:build_source",
    "a2a": "adapters.a2a:build_source",
    "agui": "adapters.agui:build_source",
}


def source_factories() -> dict[str, str]:
    """Source type -> factory: the engines above, and the sources that declare themselves in
    a spec (bridge.specs.IdentitySpec: a platform whose people they verify)."""
    return {**SOURCES, **{spec.name: spec.source_factory for spec in identity_specs() if spec.source_factory}}


def channel_factories() -> dict[str, str]:
    """Channel name -> factory, from each channel adapter's spec (bridge.specs)."""
    return {spec.name: spec.factory for spec in channel_specs()}

#: CLI verbs adapters add: name -> "module:function(subparsers)"
COMMANDS: dict[str, str] = {
    "mcp": "adapters.mcp.command:add_command",
    "gateway": "adapters.gateway.command:add_command",
}


def commands() -> dict[str, str]:
    """Every adapter CLI verb: `COMMANDS` and those channel specs declare (`ChannelSpec.command`)."""
    return {**COMMANDS, **{spec.name: spec.command for spec in channel_specs() if spec.command}}


M = TypeVar("M", bound=BaseModel)


@dataclass
class AdapterContext:
    """What an adapter factory gets besides its own config section."""

    settings: Settings
    store: Store
    clock: Clock
    key: str  # where its section sits in the config, e.g. "sources[0]" or "slack"
    data_dir: Path = field(default_factory=lambda: Path(".hitl-bridge"))

    def parse(self, model: type[M], section: dict[str, Any]) -> M:
        """Validate `section` with `model`; a failure becomes a ConfigError naming the key."""
        try:
            return model.model_validate(section)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            reason = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                reason = "unknown key (check the spelling)"
            raise ConfigError(self.settings.origin, f"{self.key}.{loc}" if loc else self.key, reason) from None

    def error(self, key: str, reason: str) -> ConfigError:
        return ConfigError(self.settings.origin, f"{self.key}.{key}" if key else self.key, reason)


def _factory(table: dict[str, str], name: str, origin: str, key: str) -> Callable[..., Any]:
    target = table.get(name)
    if target is None:
        raise ConfigError(origin, key, f"unknown type {name!r}; known: {', '.join(sorted(table))}")
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ConfigError(origin, key, f"{name!r} is not available in this build") from None
        raise
    factory: Callable[..., Any] | None = getattr(module, attr, None)
    if factory is None:
        raise ConfigError(origin, key, f"{name!r} is not available in this build")
    return factory


def add_commands(subparsers: Any) -> None:
    """Let each adapter with a CLI verb (`hitl-bridge mcp`) register it."""
    for target in commands().values():
        module_name, _, attr = target.partition(":")
        try:
            add = getattr(importlib.import_module(module_name), attr)
        except ModuleNotFoundError:  # a build without that adapter: no verb
            continue
        add(subparsers)


def build_sources(
    settings: Settings, store: Store, clock: Clock, *, optional: frozenset[str] = frozenset()
) -> list[Source]:
    sources: list[Source] = []
    names: set[str] = set()
    for i, section in enumerate(settings.sources):
        key = f"sources[{i}]"
        kind = section["type"]
        try:
            factory = _factory(source_factories(), kind, settings.origin, f"{key}.type")
        except ConfigError:
            if kind in optional:
                continue
            raise
        body = {k: v for k, v in section.items() if k != "type"}
        ctx = AdapterContext(settings, store, clock, key, settings.data_dir)
        source: Source = factory(body, ctx)
        if source.name in names:
            raise ConfigError(settings.origin, f"{key}.name",
                              f"two sources are named {source.name!r}: give each a distinct `name`")
        names.add(source.name)
        sources.append(source)
    return sources


def build_channels(settings: Settings, store: Store, clock: Clock) -> list[Channel]:
    channels: list[Channel] = []
    factories = channel_factories()
    for spec in channel_specs():
        name = spec.name
        section = settings.section(name)
        if section is None or not spec.is_on(section):
            continue  # a chat app is switched on by its token only (an unset ${…_BOT_TOKEN} leaves it off)
        factory = _factory(factories, name, settings.origin, name)
        quiet_libraries(spec.quiet_loggers)
        ctx = AdapterContext(settings, store, clock, name, settings.data_dir)
        channels.append(factory(dict(section), ctx))
    return channels


def __getattr__(name: str) -> Any:
    if name == "CHANNELS":  # channel name -> factory, found when first asked (bridge.specs)
        return channel_factories()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
