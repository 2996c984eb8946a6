"""Routes: matched in order on the request's source, engine fields and labels; first wins."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from bridge.config_routes import Route
from bridge.models import Request

# match keys that read a request field; any other key reads a label of that name
FIELD_KEYS = {
    "source": "source",
    "engine": "engine",
    "workspace": "workspace",
    "run": "run_id",
    "run_id": "run_id",
    "agent": "agent",
    "tool": "tool",
    "title": "title",
}


def request_value(request: Request, key: str) -> str | None:
    if key.startswith("labels."):
        return request.labels.get(key.removeprefix("labels."))
    attr = FIELD_KEYS.get(key)
    if attr is not None:
        value = getattr(request, attr)
        return None if value is None else str(value)
    return request.labels.get(key)


def route_matches(route: Route, request: Request) -> bool:
    for key, patterns in route.match.items():
        value = request_value(request, key)
        if value is None:
            return False
        options = [patterns] if isinstance(patterns, str) else patterns
        if not any(fnmatchcase(value, pattern) for pattern in options):
            return False
    return True


class Router:
    def __init__(self, routes: Sequence[Route], default: Route) -> None:
        self.routes = list(routes)
        self.default = default
        self._by_name = {r.name: r for r in self.routes}
        self._by_name[default.name] = default

    def choose(self, request: Request) -> Route:
        return next((r for r in self.routes if route_matches(r, request)), self.default)

    def get(self, name: str) -> Route:
        """The route a stored request was given (falls back to the default if renamed)."""
        return self._by_name.get(name, self.default)

    def named(self, name: str | None) -> Route | None:
        """The route of that name in this config, if it still has one."""
        return self._by_name.get(name)

    def all_targets(self) -> set[str]:
        targets: set[str] = set()
        for route in [*self.routes, self.default]:
            targets.update(route.notify)
            for level in route.escalate:
                targets.update(level.notify)
        return targets
