"""What a channel adapter declares about itself, so the core names no platform.

Each channel package has a `spec` module (`adapters/<name>/spec.py`) whose `SPEC` is a
`ChannelSpec`: its config section and handle prefix, how its handles are spelled, whom a
person's handle lets it reach, when it is switched on, and the fix texts preflight and
doctor print. The registry, the config, `bridge.people` and `bridge.preflight` read these;
the core finds them by looking for `spec.py` in the `adapters` package, without importing
any adapter by name (the way `bridge.registry` imports factories from strings).

Specs are found on first use, never while `bridge` modules are being imported (an
adapter's package imports the core). A spec module imports only `bridge.specs` (and the
standard library): it is read from its file without importing its package, so the config
can be read without loading every platform's SDK; import from it with
`from adapters.<name>.spec import …`.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

#: the package whose sub-packages are adapters
ADAPTERS_PACKAGE = "adapters"
SPEC_MODULE = "spec"


class HandleError(ValueError):
    """A handle an adapter's rules refuse (the message says what a handle of it looks like)."""


def _any_id(ident: str) -> str:
    return ident


def _no_target(ident: str) -> str | None:
    return None


def _on_when_present(section: Mapping[str, Any]) -> bool:
    return True


@dataclass(frozen=True)
class ChannelSpec:
    """One channel adapter, as the core sees it.

    `name` is both the config section (`slack:`) and the handle prefix (`slack:U0123ABC`).
    """

    name: str
    #: "module:function" building the channel from its section (bridge.registry)
    factory: str
    #: "module:Model" validating its section (the config reference is generated from it)
    config_model: str = ""
    #: where it comes in lists the operator reads (targets, handles, channels started)
    order: int = 100
    #: the section when the config has none: None (off until configured) or {} (on)
    default_section: dict[str, Any] | None = None
    #: the section is present: is the channel on? (a chat app: when it has a bot token)
    enabled: Callable[[Mapping[str, Any]], bool] = _on_when_present
    #: why a present section leaves the channel off (a line at start and in doctor), or None
    off_reason: Callable[[Mapping[str, Any]], str | None] = lambda section: None
    #: fix for a present section that leaves it off: what to set
    off_fix: str = ""
    #: fix for a target of this channel when the channel is not configured
    missing_fix: str = "fix the route's target"
    #: the id of a handle in its one spelling; raises HandleError for an id that is not one
    normalize: Callable[[str], str] = _any_id
    #: for people: — how to write a handle of this platform (None: not a way to reach a person)
    person_hint: str | None = None
    #: a person's handle id → the notify target that reaches them (a DM), or None
    dm_target: Callable[[str], str | None] = _no_target
    #: a responders entry's id → the one person's handle id it names, or None (a group chat, a channel)
    person_of_target: Callable[[str], str | None] = _no_target
    #: a handle id → other ways a config or an engine may write it (`@U1` for `U1`)
    variants: Callable[[str], set[str]] = lambda ident: set()
    #: a notify target's id in one spelling (the same mailbox however it is written)
    canonical_target: Callable[[str], str] = _any_id
    #: how its targets are written, for "is not a target" (a bare form has no prefix: `web`)
    target_forms: tuple[str, ...] = ()
    #: a target written without a prefix that this channel would own (`#ops`): the prefixed form
    claim_bare: Callable[[str], str | None] = lambda target: None
    #: the environment variable whose value is a target on the default route, and how to read it
    target_env: str | None = None
    env_target: Callable[[str], str] = _any_id
    #: its section from the environment alone (no config file), or None
    env_section: Callable[[Mapping[str, str]], dict[str, Any] | None] = lambda env: None
    #: URLs its section makes public (a webhook URL): the bridge answers to their hosts
    public_urls: Callable[[Mapping[str, Any]], list[str]] = lambda section: []
    #: libraries it uses whose INFO lines are noise for an operator
    quiet_loggers: tuple[str, ...] = ()
    #: it only shows requests; no route needs to notify it (an inbox, not a chat)
    passive: bool = False
    #: a route that names no target notifies it (the inbox)
    default_target: bool = False
    #: an identity (`<name>:<id>`'s id) that is everyone who knows a shared secret: no one
    #: person, so it casts no vote where people are counted, and no person may claim it
    shared_identity: str | None = None
    #: on an open loopback bridge its caller is `<name>:local`: everyone there, one voter
    local_callers: bool = False
    #: "module:add_command" of a CLI verb it adds (argparse, like `bridge.registry.COMMANDS`), or ""
    command: str = ""
    #: its callers are people the daemon itself authenticated (a login, a token): their
    #: answers are trusted like the API's, not checked against a request's responders
    daemon_authenticated: bool = False

    def is_on(self, section: Mapping[str, Any] | None) -> bool:
        return isinstance(section, Mapping) and self.enabled(section)


@dataclass(frozen=True)
class IdentitySpec:
    """A platform whose people a source verifies but never notifies (who triggered a deploy
    in a CI system): its handles (`<name>:<id>`) may be listed in `people:` and named in a
    request's `requested_by`, so four-eyes and quorum know them; it is no channel."""

    name: str
    #: the id of a handle in its one spelling; raises HandleError for an id that is not one
    normalize: Callable[[str], str] = _any_id
    #: for people: — how to write a handle of this platform
    person_hint: str | None = None
    #: "module:function" building the source of the same name (`sources: - type: <name>`)
    source_factory: str = ""


def on_by_token(name: str, title: str, key: str = "bot_token") -> dict[str, Any]:
    """`enabled`, `off_reason` and `off_fix` of a channel switched on by a token in its section
    (an unset `${…_BOT_TOKEN:-}` leaves it off)."""
    def off_reason(section: Mapping[str, Any]) -> str | None:
        return None if section.get(key) else f"the {name}: section's {key} is empty, so {title} is off"

    return {"enabled": lambda section: bool(section.get(key)), "off_reason": off_reason,
            "off_fix": f"set {name}.{key}"}


def _spec_files() -> list[tuple[str, Path]]:
    """(module name, file) of every adapter's spec, without importing the adapters."""
    package = importlib.import_module(ADAPTERS_PACKAGE)
    found: dict[str, Path] = {}
    for root in getattr(package, "__path__", []):
        for path in sorted(Path(root).glob(f"*/{SPEC_MODULE}.py")):
            found.setdefault(f"{ADAPTERS_PACKAGE}.{path.parent.name}.{SPEC_MODULE}", path)
    return sorted(found.items())


def _load(name: str, path: Path) -> ModuleType:
    """The spec module `name`, read from its file alone: its package (the adapter, with its
    platform SDK) is not imported for it, so reading the config stays quick."""
    if name in sys.modules:
        return sys.modules[name]
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _all_specs() -> tuple[ChannelSpec | IdentitySpec, ...]:
    specs: list[ChannelSpec | IdentitySpec] = []
    for name, path in _spec_files():
        spec = getattr(_load(name, path), "SPEC", None)
        if not isinstance(spec, ChannelSpec | IdentitySpec):
            raise TypeError(f"{name}.SPEC is not a ChannelSpec")
        specs.append(spec)
    return tuple(specs)


@functools.cache
def channel_specs() -> tuple[ChannelSpec, ...]:
    """Every channel adapter's spec, in `order`."""
    specs = [s for s in _all_specs() if isinstance(s, ChannelSpec)]
    return tuple(sorted(specs, key=lambda s: (s.order, s.name)))


@functools.cache
def identity_specs() -> tuple[IdentitySpec, ...]:
    """Every source adapter that verifies people without being a channel (bridge.people)."""
    return tuple(sorted((s for s in _all_specs() if isinstance(s, IdentitySpec)), key=lambda s: s.name))


def handle_spec(name: str) -> ChannelSpec | IdentitySpec | None:
    """The spec that says how handles of platform `name` are spelled (a channel's, or a source's)."""
    return channel_spec(name) or next((s for s in identity_specs() if s.name == name), None)


def default_targets() -> list[str]:
    """What a route notifies when it names no target."""
    return [s.name for s in channel_specs() if s.default_target]


def channel_spec(name: str) -> ChannelSpec | None:
    """The spec of the channel whose section or handle prefix is `name`."""
    return next((s for s in channel_specs() if s.name == name), None)
