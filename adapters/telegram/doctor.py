"""`hitl-bridge doctor` for Telegram: ask the Bot API now whether the config can work.

- `getMe`: is the bot token taken (and which bot)?
- each target chat: `getChat` (the chat exists and the bot may see it);
- webhook mode: `getWebhookInfo` (Telegram sends updates to this bridge's URL, and the
  last delivery did not fail).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from telegram import Bot
from telegram.error import BadRequest, Forbidden, InvalidToken, TelegramError

from adapters.telegram.health import TOKEN_FIX
from bridge.doctor import Finding, fail, ok, warn

if TYPE_CHECKING:
    from adapters.telegram.settings import TelegramSettings
    from bridge.store.base import Store


def _scrub(text: str, token: str) -> str:
    return text.replace(token, "<bot-token>") if token else text


async def diagnose(settings: TelegramSettings, targets: Sequence[str], responders: Sequence[str],
                   store: Store) -> list[Finding]:
    token = settings.bot_token.get_secret_value()
    bot = Bot(token, base_url=settings.api_url, base_file_url=settings.file_url)
    try:
        await bot.initialize()  # getMe
    except InvalidToken:  # its message holds the token: never shown
        return [fail("telegram bot", "Telegram refused the bot token (Unauthorized)", TOKEN_FIX)]
    except TelegramError as exc:
        return [fail("telegram bot", f"cannot reach Telegram at {settings.api_url} "
                                     f"({type(exc).__name__}: {_scrub(exc.message, token)})",
                     "check the network, a proxy, and telegram.api_url")]
    try:
        findings = [ok("telegram bot", f"@{bot.username} (id {bot.id})")]
        for target in targets:
            findings.append(await _chat(bot, target, token))
        if settings.mode == "webhook":
            findings.append(await _webhook(bot, settings.webhook_url or "", token))
        return findings
    finally:
        await bot.shutdown()


async def _chat(bot: Bot, target: str, token: str) -> Finding:
    try:
        chat_id = int(target.removeprefix("telegram:"))
    except ValueError:
        return fail(target, "not a chat id", "use telegram:<number> (a person's id, or a group's negative id)")
    private = chat_id > 0
    try:
        chat = await bot.get_chat(chat_id)
    except (BadRequest, Forbidden) as exc:
        fix = (f"the person must open https://t.me/{bot.username} and press Start" if private else
               f"add @{bot.username} to the group; a group that became a supergroup has a new id (-100…)")
        return fail(target, f"Telegram says: {_scrub(exc.message, token)}", fix)
    except TelegramError as exc:
        return fail(target, f"getChat failed ({type(exc).__name__})", "try again; check the network")
    if private:
        name = f"@{chat.username}" if chat.username else chat.first_name or str(chat_id)
        return ok(target, f"private chat with {name}")
    return ok(target, f"{chat.type} {chat.title!r}")


async def _webhook(bot: Bot, expected: str, token: str) -> Finding:
    try:
        hook = await bot.get_webhook_info()
    except TelegramError as exc:
        return fail("telegram webhook", f"getWebhookInfo failed: {_scrub(exc.message, token)}")
    if hook.url != expected:
        return fail("telegram webhook", f"Telegram sends updates to {hook.url or '(nowhere)'}, not {expected}",
                    "start the bridge (it calls setWebhook), or fix telegram.webhook_url")
    if hook.last_error_message:
        when = hook.last_error_date or datetime.now(UTC)
        return warn("telegram webhook", f"Telegram's last delivery failed at {when:%Y-%m-%d %H:%M} UTC: "
                                        f"{hook.last_error_message} ({hook.pending_update_count} waiting)",
                    "check that webhook_url reaches /telegram/webhook on this bridge (TLS, proxy)")
    return ok("telegram webhook", f"{hook.url} ({hook.pending_update_count} update(s) waiting)")
