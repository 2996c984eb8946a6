"""What the config must get right before anything starts (`serve`, `check-config`, a SIGHUP
reload): every target a route names has a configured channel to show it.

Like Alertmanager refusing a route to an undefined receiver, a target no channel owns is a
config error naming the route's key, not a warning at start and a request nobody ever sees.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from bridge.config import Settings
from bridge.config_routes import Route
from bridge.errors import ConfigError
from bridge.ports import Channel
from bridge.specs import channel_spec, channel_specs


def route_targets(settings: Settings) -> Iterator[tuple[str, str]]:
    """(key, target) for every target the routes name, e.g. ("routes[0].escalate[1].notify", "slack:#x")."""
    named: list[tuple[str, Route]] = [(f"routes[{i}]", r) for i, r in enumerate(settings.routes)]
    named.append(("default_route", settings.default_route))
    for key, route in named:
        for target in route.notify:
            yield f"{key}.notify", target
        for n, level in enumerate(route.escalate):
            for target in level.notify:
                yield f"{key}.escalate[{n}].notify", target


@dataclass(frozen=True)
class TargetProblem:
    """A target no configured channel owns: where it is named, what is wrong, the fix."""

    key: str
    target: str
    problem: str
    fix: str

    def error(self, origin: str, more: int = 0) -> ConfigError:
        extra = f" (and {more} more target(s) without a channel)" if more else ""
        return ConfigError(origin, self.key, f"target {self.target!r} {self.problem}: {self.fix}{extra}")


def _diagnose(settings: Settings, key: str, target: str, configured: Sequence[str]) -> TargetProblem:
    have = f"configured channels: {', '.join(configured) or 'none'}"
    specs = channel_specs()
    if target.startswith(("person:", "group:")):
        hints = [s.person_hint for s in specs if s.person_hint]
        listed = f"{', '.join(hints[:-1])} or {hints[-1]}" if len(hints) > 1 else "".join(hints)
        return TargetProblem(key, target, f"reaches nobody: no handle of theirs is on a configured channel ({have})",
                             f"add their {listed} handle to people:, or configure that channel")
    prefix, sep, _ = target.partition(":")
    bare = [f for s in specs for f in s.target_forms if ":" not in f]
    for spec in specs:
        claimed = spec.claim_bare(target)
        if claimed is not None:
            others = [f for s in specs if s is not spec for f in s.target_forms[:1] if ":" in f]
            return TargetProblem(key, target, f"names no channel ({have})",
                                 f"write {claimed} (or {', '.join([*others, *bare])})")
    if not sep and target not in bare:
        forms = [f for s in specs for f in s.target_forms if ":" in f] + ["person:<name>", "group:<name>"]
        return TargetProblem(key, target, f"is not a target ({have})",
                             f"use {', '.join(forms)}" + (f" or {' or '.join(bare)}" if bare else ""))
    owner = channel_spec(prefix if sep else target)
    if owner is None:
        return TargetProblem(key, target, f"has no configured channel ({have})", "fix the route's target")
    section = settings.section(owner.name)
    reason = owner.off_reason(section) if isinstance(section, dict) else None
    if reason is not None:
        return TargetProblem(key, target, f"has no channel: {reason} ({have})", owner.off_fix)
    return TargetProblem(key, target, f"has no configured channel ({have})", owner.missing_fix)


def target_errors(settings: Settings, channels: Sequence[Channel]) -> list[TargetProblem]:
    """Each target that no channel owns, once, in config order."""
    problems: list[TargetProblem] = []
    seen: set[str] = set()
    names = [c.name for c in channels]
    for key, target in route_targets(settings):
        reached = settings.directory.targets_of(target)  # person:/group: → their handles
        if target in seen or any(c.owns(t) for t in ([target] if reached is None else reached) for c in channels):
            continue
        seen.add(target)
        problems.append(_diagnose(settings, key, target, names))
    return problems


def check_targets(settings: Settings, channels: Sequence[Channel]) -> None:
    """Raise a ConfigError for the first target without a channel (naming how many more)."""
    problems = target_errors(settings, channels)
    if problems:
        raise problems[0].error(settings.origin, len(problems) - 1)


def switched_off(settings: Settings) -> list[str]:
    """Channel sections present that leave their channel off (a chat app whose bot_token is
    written `${NAME:-}` and unset). Not an error (routes naming them are), but worth a line
    at start."""
    out = []
    for spec in channel_specs():
        section = settings.section(spec.name)
        reason = spec.off_reason(section) if isinstance(section, dict) else None
        if reason is not None:
            out.append(reason)
    return out


def unreached_channels(settings: Settings, channels: Sequence[Channel]) -> list[str]:
    """Channels that send (not an inbox), are on, and that no route ever notifies: nothing
    would ever be sent there. Not an error (people may still answer there), but said at start
    and by doctor, with the fix."""
    targets: list[str] = []
    for _key, target in route_targets(settings):
        reached = settings.directory.targets_of(target)  # person:/group: → their handles
        targets += [target] if reached is None else list(reached)
    notes = []
    for channel in channels:
        spec = channel_spec(channel.name)
        if spec is None or spec.passive or any(channel.owns(t) for t in targets):
            continue
        fix = f"set {spec.target_env} or add a route" if spec.target_env else "add a route"
        notes.append(f"{channel.name} is on but no route notifies it: {fix}")
    return notes


def check_config(settings: Settings) -> str:
    """Everything `serve` checks before it starts, without opening the store or calling
    any platform: sections, adapters, targets. Returns a one-line summary; raises the
    first ConfigError."""
    from bridge.clock import SystemClock
    from bridge.registry import build_channels, build_sources
    from bridge.store import open_store_from_url

    store = open_store_from_url(settings.store.url)  # built, never opened
    channels = build_channels(settings, store, SystemClock())
    sources = build_sources(settings, store, SystemClock())
    check_targets(settings, channels)
    rules = f", {len(settings.policies)} rule(s) in policies:" if settings.policies else ""
    return (f"{settings.origin}: ok — {len(settings.routes)} route(s){rules}; channels: "
            f"{', '.join(c.name for c in channels) or 'none'}; sources: {', '.join(s.name for s in sources) or 'none'}")
