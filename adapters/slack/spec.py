"""What the core needs to know about Slack (bridge.specs): handles are user ids
(`slack:U0123ABC`, also written `slack:@U0123ABC`), a person is reached by a DM
(`slack:@U…`), channels are `slack:#name`; on when the section has a bot token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bridge.specs import ChannelSpec, HandleError, on_by_token

#: the environment variable naming the default route's Slack target (bridge.env_routes)
CHANNEL_ENV = "SLACK_CHANNEL"


def is_user_id(text: str) -> bool:
    """`U0123ABC` / `W0123ABC`: a person, not a channel or a user group."""
    return len(text) >= 3 and text[0] in "UW" and text.isalnum() and text.upper() == text


def normalize(ident: str) -> str:
    ident = ident.removeprefix("@")
    if not (ident[:1] in ("U", "W") and ident.isalnum() and ident.upper() == ident):
        raise HandleError("a Slack handle is a user id such as slack:U0123ABC")
    return ident


def person_of_target(ident: str) -> str | None:
    ident = ident.removeprefix("@")
    return ident if is_user_id(ident) else None


def env_target(value: str) -> str:
    """`#deploys`, `deploys`, `@U1` or `slack:#deploys` → a Slack target."""
    value = value.strip()
    if value.startswith("slack:"):
        return value
    return f"slack:{value}" if value.startswith(("#", "@")) else f"slack:#{value}"


def env_section(env: Mapping[str, str]) -> dict[str, Any] | None:
    if not env.get("SLACK_BOT_TOKEN"):
        return None
    return {"bot_token": env["SLACK_BOT_TOKEN"], "signing_secret": env.get("SLACK_SIGNING_SECRET", ""),
            "app_token": env.get("SLACK_APP_TOKEN", "")}


SPEC = ChannelSpec(
    name="slack",
    factory="adapters.slack:build_channel",
    config_model="adapters.slack.settings:SlackSettings",
    order=1,
    **on_by_token("slack", "Slack"),
    missing_fix="add a slack: section with bot_token and signing_secret (or app_token)",
    normalize=normalize,
    person_hint="slack:U…",
    dm_target=lambda ident: f"slack:@{ident}",
    person_of_target=person_of_target,
    variants=lambda ident: {f"@{ident}"},
    target_forms=("slack:#name", "slack:@U…", "slack:@group"),
    claim_bare=lambda target: f"slack:{target}" if target.startswith(("#", "@")) else None,
    target_env=CHANNEL_ENV,
    env_target=env_target,
    env_section=env_section,
    quiet_loggers=("slack_bolt",),
)
