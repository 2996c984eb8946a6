"""What the core needs to know about Telegram (bridge.specs): handles are user ids
(`telegram:123456789`), a person is reached in their private chat (the same id), group
chats are negative ids; on when the section has a bot token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bridge.specs import ChannelSpec, HandleError, on_by_token

#: the environment variable naming the default route's Telegram chat (bridge.env_routes)
CHAT_ENV = "TELEGRAM_CHAT_ID"


def normalize(ident: str) -> str:
    if not ident.isdigit():
        raise HandleError("a Telegram handle is a user id such as telegram:123456789")
    return ident


def env_target(value: str) -> str:
    value = value.strip()
    return value if value.startswith("telegram:") else f"telegram:{value}"


def env_section(env: Mapping[str, str]) -> dict[str, Any] | None:
    return {"bot_token": env["TELEGRAM_BOT_TOKEN"]} if env.get("TELEGRAM_BOT_TOKEN") else None


def _public_urls(section: Mapping[str, Any]) -> list[str]:
    url = section.get("webhook_url")
    return [url] if isinstance(url, str) else []


SPEC = ChannelSpec(
    name="telegram",
    factory="adapters.telegram:build_channel",
    config_model="adapters.telegram.settings:TelegramSettings",
    order=2,
    **on_by_token("telegram", "Telegram"),
    missing_fix="add a telegram: section with bot_token",
    normalize=normalize,
    person_hint="telegram:<id>",
    dm_target=lambda ident: f"telegram:{ident}",
    person_of_target=lambda ident: ident if ident.isdigit() else None,  # negative ids are group chats
    target_forms=("telegram:<chat id>",),
    target_env=CHAT_ENV,
    env_target=env_target,
    env_section=env_section,
    public_urls=_public_urls,
    quiet_loggers=("telegram.ext",),
)
