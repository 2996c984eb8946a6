"""What the config must get right before anything starts (`serve`, `check-config`, a SIGHUP
reload): every target a route names has a configured channel to show it.

Like Alertmanager refusing a route to an undefined receiver, a target no channel owns is a
config error naming the route's key, not a warning at start and a request nobody ever sees.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from bridge.config import Route, Settings
from bridge.errors import ConfigError
from bridge.ports import Channel


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
    if target.startswith(("person:", "group:")):
        return TargetProblem(key, target, f"reaches nobody: no handle of theirs is on a configured channel ({have})",
                             "add their slack:U…, telegram:<id> or email: handle to people:, or configure "
                             "that channel")
    prefix, sep, _ = target.partition(":")
    if target.startswith(("#", "@")):
        return TargetProblem(key, target, f"names no channel ({have})",
                             f"write slack:{target} (or telegram:<chat id>, web)")
    if not sep and target != "web":
        return TargetProblem(key, target, f"is not a target ({have})",
                             "use slack:#name, slack:@U…, slack:@group, telegram:<chat id>, email:<address>, "
                             "person:<name>, group:<name> or web")
    name = prefix if sep else target
    section = getattr(settings, name, None) if name in ("slack", "telegram") else None
    if isinstance(section, dict) and not section.get("bot_token"):
        return TargetProblem(key, target, f"has no channel: the {name}: section's bot_token is empty, so "
                             f"{name.title()} is off ({have})", f"set {name}.bot_token")
    fix = {"slack": "add a slack: section with bot_token and signing_secret (or app_token)",
           "telegram": "add a telegram: section with bot_token",
           "email": "add an email: section with smtp_url and from",
           "web": "remove `web: {enabled: false}`"}.get(name, "fix the route's target")
    return TargetProblem(key, target, f"has no configured channel ({have})", fix)


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
    """Chat sections present whose bot_token is empty (written `${NAME:-}`): those channels
    are off. Not an error (routes naming them are), but worth a line at start."""
    return [f"the {name}: section's bot_token is empty, so {name.title()} is off"
            for name in ("slack", "telegram")
            if isinstance(getattr(settings, name), dict) and not getattr(settings, name).get("bot_token")]


#: the environment variable that gives a chat channel a target on the default route (bridge.env_routes)
TARGET_ENV = {"slack": "SLACK_CHANNEL", "telegram": "TELEGRAM_CHAT_ID"}


def unreached_channels(settings: Settings, channels: Sequence[Channel]) -> list[str]:
    """Chat channels that are on (a bot token) but that no route ever notifies: nothing would
    ever be sent there. Not an error (people may still answer there), but said at start and by
    doctor, with the fix."""
    targets: list[str] = []
    for _key, target in route_targets(settings):
        reached = settings.directory.targets_of(target)  # person:/group: → their handles
        targets += [target] if reached is None else list(reached)
    notes = []
    for channel in channels:
        if channel.name not in ("slack", "telegram", "email") or any(channel.owns(t) for t in targets):
            continue
        env = TARGET_ENV.get(channel.name)
        fix = f"set {env} or add a route" if env else "add a route"
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
    return (f"{settings.origin}: ok — {len(settings.routes)} route(s); channels: "
            f"{', '.join(c.name for c in channels) or 'none'}; sources: {', '.join(s.name for s in sources) or 'none'}")
