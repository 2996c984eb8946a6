"""SIGHUP: read the config file again and apply what can change while running.

Reloadable: routes (matchers, targets, responders, timing), the default route, people
and groups when the config has them, and the rules of `policies:`. Everything else — the store, the listen address and
tokens, channel sections (tokens), sources, delivery — is kept as it is, with a warning
that it takes effect after a restart. A new config that is not valid (bad YAML, an unset
variable, a target no running channel shows, a section `serve` would refuse) is refused
as a whole and the running config stays.

A new config with no rules at all (no routes, default_route, people or groups: an empty,
comment-only or cut-short file) is refused too while the running one has some, unless
the file says `allow_empty: true`. Whatever a reload applies, a request already open
keeps the rules it was created under (bridge.rules).
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.config import EMBEDDED, Settings, load_settings
from bridge.config_routes import Route
from bridge.errors import ConfigError
from bridge.ports import Channel
from bridge.preflight import check_config, check_targets

#: sections swapped on reload
RELOADABLE = ("routes", "default_route", "people", "groups", "allow_empty", "policies")


@dataclass(frozen=True)
class ReloadPlan:
    settings: Settings  # the running settings with the reloadable sections replaced
    changes: list[str]  # what changed, for the log: "route deploys: notify, responders"
    needs_restart: list[str]  # sections that differ but are kept until a restart


def plan_reload(current: Settings, new: Settings) -> ReloadPlan:
    fields = [name for name in type(current).model_fields if name != "origin"]
    reloadable = [name for name in fields if name in RELOADABLE and getattr(current, name) != getattr(new, name)]
    restart = [name for name in fields if name not in RELOADABLE and getattr(current, name) != getattr(new, name)]
    restart += [name for name in {**current.sections, **new.sections} if current.section(name) != new.section(name)]
    changes = describe_routes(current, new) if {"routes", "default_route"} & set(reloadable) else []
    changes += [f"{name} changed" for name in reloadable if name not in ("routes", "default_route")]
    applied = current.model_copy(update={name: getattr(new, name) for name in reloadable})
    applied._people = new.directory  # resolved from the new people:/groups: (model_copy keeps the old)
    return ReloadPlan(applied, changes, restart)


def describe_routes(current: Settings, new: Settings) -> list[str]:
    """Route by route: added, removed, which keys changed, and a new order."""
    def by_name(s: Settings) -> dict[str, Route]:
        return {r.name or "": r for r in [*s.routes, s.default_route]}

    before, after = by_name(current), by_name(new)
    out = [f"route {name} added" for name in after if name not in before]
    out += [f"route {name} removed" for name in before if name not in after]
    for name in after:
        if name in before and before[name] != after[name]:
            keys = [k for k in Route.model_fields if getattr(before[name], k) != getattr(after[name], k)]
            out.append(f"route {name}: {', '.join(keys)} changed")
    common = [n for n in after if n in before]
    if [n for n in before if n in after] != common:
        out.append("route order changed (first match wins)")
    return out


class NoRules(ConfigError):
    """The new config says nothing about who answers what, and does not say that is meant."""

    def __init__(self, origin: str) -> None:
        super().__init__(origin, "", NO_RULES)


NO_RULES = ("no routes, default_route, people or groups: this would drop every rule (an empty or "
            "cut-short file?); if that is meant, add `allow_empty: true` to the file")


def check_has_rules(settings: Settings) -> None:
    """Raise NoRules for a config file with no rules that does not say `allow_empty: true`."""
    if not settings.has_rules and not settings.allow_empty and settings.origin != EMBEDDED:
        raise NoRules(settings.origin)


def read_new_config(current: Settings, channels: list[Channel], env: dict[str, str] | None = None) -> ReloadPlan:
    """Read and check the file `current` came from; raise ConfigError to keep the old one
    (NoRules when it would drop every rule the running config has). Blocking (file and
    YAML): the daemon runs it in a worker thread."""
    new = load_settings(current.origin, env=env)
    if current.has_rules:
        check_has_rules(new)
    plan = plan_reload(current, new)
    if plan.needs_restart:
        check_config(new)  # what a restart would refuse is refused now, not at the next restart
    check_targets(new, channels)  # the channels that run now must show every target
    return plan


__all__ = ["RELOADABLE", "ConfigError", "NoRules", "ReloadPlan", "check_has_rules", "plan_reload", "read_new_config"]
