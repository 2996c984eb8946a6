"""SIGHUP: read the config file again and apply what can change while running.

Reloadable: routes (matchers, targets, responders, timing), the default route, and people
and groups when the config has them. Everything else — the store, the listen address and
tokens, channel sections (tokens), sources, delivery — is kept as it is, with a warning
that it takes effect after a restart. A new config that is not valid (bad YAML, an unset
variable, a target no running channel shows, a section `serve` would refuse) is refused
as a whole and the running config stays.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.config import Route, Settings, load_settings
from bridge.errors import ConfigError
from bridge.ports import Channel
from bridge.preflight import check_config, check_targets

#: sections swapped on reload
RELOADABLE = ("routes", "default_route", "people", "groups")


@dataclass(frozen=True)
class ReloadPlan:
    settings: Settings  # the running settings with the reloadable sections replaced
    changes: list[str]  # what changed, for the log: "route deploys: notify, responders"
    needs_restart: list[str]  # sections that differ but are kept until a restart


def plan_reload(current: Settings, new: Settings) -> ReloadPlan:
    fields = [name for name in type(current).model_fields if name != "origin"]
    reloadable = [name for name in fields if name in RELOADABLE and getattr(current, name) != getattr(new, name)]
    restart = [name for name in fields if name not in RELOADABLE and getattr(current, name) != getattr(new, name)]
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


def read_new_config(current: Settings, channels: list[Channel], env: dict[str, str] | None = None) -> ReloadPlan:
    """Read and check the file `current` came from; raise ConfigError to keep the old one."""
    new = load_settings(current.origin, env=env)
    plan = plan_reload(current, new)
    if plan.needs_restart:
        check_config(new)  # what a restart would refuse is refused now, not at the next restart
    check_targets(new, channels)  # the channels that run now must show every target
    return plan


__all__ = ["RELOADABLE", "ConfigError", "ReloadPlan", "plan_reload", "read_new_config"]
