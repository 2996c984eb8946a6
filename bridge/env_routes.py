"""Chat set up by the environment alone: a channel's spec may name an environment variable
(`SLACK_CHANNEL`, `TELEGRAM_CHAT_ID`) that gives the default route a target on that channel,
when the config names no route of its own (no `routes:`, no `default_route:`), so
`SLACK_BOT_TOKEN` + `SLACK_APP_TOKEN` (or `SLACK_SIGNING_SECRET`) + `SLACK_CHANNEL`, or
`TELEGRAM_BOT_TOKEN` + `TELEGRAM_CHAT_ID`, is a complete set-up.

    routes: []  +  SLACK_CHANNEL=#deploys  →  default_route: {notify: [web, "slack:#deploys"]}
"""

from __future__ import annotations

from typing import Any

from bridge.specs import channel_specs


def apply_env_routes(data: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """`data` (the config before validation) with the default route built from the
    environment, when the config has no routes of its own and a variable names a target."""
    if data.get("routes") or "default_route" in data:
        return data
    targets = []
    for spec in channel_specs():
        if spec.target_env and env.get(spec.target_env, "").strip() and spec.is_on(data.get(spec.name)):
            targets.append(spec.env_target(env[spec.target_env]))
    if not targets:
        return data
    shown = [s.name for s in channel_specs() if s.default_target and s.is_on(data.get(s.name, s.default_section))]
    return {**data, "default_route": {"name": "default", "notify": [*shown, *targets]}}
