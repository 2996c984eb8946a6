"""Chat set up by the environment alone: `SLACK_CHANNEL` and `TELEGRAM_CHAT_ID` give the default
route a target on that channel, when the config names no route of its own (no `routes:`, no
`default_route:`), so `SLACK_BOT_TOKEN` + `SLACK_APP_TOKEN` (or `SLACK_SIGNING_SECRET`) +
`SLACK_CHANNEL`, or `TELEGRAM_BOT_TOKEN` + `TELEGRAM_CHAT_ID`, is a complete set-up.

    routes: []  +  SLACK_CHANNEL=#deploys  →  default_route: {notify: [web, "slack:#deploys"]}
"""

from __future__ import annotations

from typing import Any

SLACK_CHANNEL_ENV = "SLACK_CHANNEL"
TELEGRAM_CHAT_ENV = "TELEGRAM_CHAT_ID"


def slack_target(value: str) -> str:
    value = value.strip()
    if value.startswith("slack:"):
        return value
    return f"slack:{value}" if value.startswith(("#", "@")) else f"slack:#{value}"


def telegram_target(value: str) -> str:
    value = value.strip()
    return value if value.startswith("telegram:") else f"telegram:{value}"


def _on(data: dict[str, Any], name: str) -> bool:
    section = data.get(name)
    return isinstance(section, dict) and bool(section.get("bot_token"))


def apply_env_routes(data: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """`data` (the config before validation) with the default route built from the
    environment, when the config has no routes of its own and a variable names a target."""
    if data.get("routes") or "default_route" in data:
        return data
    targets = []
    if env.get(SLACK_CHANNEL_ENV, "").strip() and _on(data, "slack"):
        targets.append(slack_target(env[SLACK_CHANNEL_ENV]))
    if env.get(TELEGRAM_CHAT_ENV, "").strip() and _on(data, "telegram"):
        targets.append(telegram_target(env[TELEGRAM_CHAT_ENV]))
    if not targets:
        return data
    web = data.get("web")
    web_on = "web" not in data or (isinstance(web, dict) and web.get("enabled") is not False)
    return {**data, "default_route": {"name": "default", "notify": [*(["web"] if web_on else []), *targets]}}
