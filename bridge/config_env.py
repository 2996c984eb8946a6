"""The config file's environment: `${ENV}` substitution in its values, and
`HITL_BRIDGE__SECTION__KEY=value` overrides (double underscores between keys, value read
as YAML), e.g. `HITL_BRIDGE__HTTP__LISTEN=0.0.0.0:8787`."""

from __future__ import annotations

import re
from typing import Any

import yaml

ENV_PREFIX = "HITL_BRIDGE__"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class UnsetVariables(ValueError):
    """`${NAME}` references (no default) whose variable is unset or empty: (key, name) pairs."""

    def __init__(self, missing: list[tuple[str, str]]) -> None:
        super().__init__(", ".join(name for _, name in missing))
        self.missing = missing


def substitute_env(value: Any, env: dict[str, str], key: str = "") -> Any:
    """Replace `${NAME}` / `${NAME:-default}` in every string. `${NAME}` whose variable is
    unset or empty raises UnsetVariables naming it and the key (an optional value says so
    with a default, even an empty one: `${NAME:-}`)."""
    missing: list[tuple[str, str]] = []
    out = _substitute(value, env, key, missing)
    if missing:
        raise UnsetVariables(missing)
    return out


def _substitute(value: Any, env: dict[str, str], key: str, missing: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        def one(m: re.Match[str]) -> str:
            found = env.get(m.group(1))
            if found:
                return found
            if m.group(2) is None:
                missing.append((key, m.group(1)))
                return ""
            return m.group(2)

        return _ENV_REF.sub(one, value)
    if isinstance(value, list):
        return [_substitute(v, env, f"{key}[{i}]", missing) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _substitute(v, env, f"{key}.{k}" if key else str(k), missing) for k, v in value.items()}
    return value


def apply_env_overrides(data: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    for name, raw in sorted(env.items()):
        if not name.startswith(ENV_PREFIX):
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX):].split("__") if p]
        if not path:
            continue
        try:
            value = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError:
            value = raw
        node = data
        for key in path[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = {}
                node[key] = child
            node = child
        node[path[-1]] = value
    return data
