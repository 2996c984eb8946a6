"""How the Telegram channel reports itself as `channel:telegram` in the health registry.

A token Telegram refuses (401/404 → `InvalidToken`), at start (`getMe`) or on any later
call, makes the channel `failing` (not ready: nobody can be reached on Telegram); the
daemon keeps serving everyone else and keeps trying to connect. Telegram unreachable makes
it `degraded`. The next call that succeeds makes it `ok` again.
"""

from __future__ import annotations

from bridge.health import Health, Status

COMPONENT = "channel:telegram"
TOKEN_FIX = ("put the token @BotFather gives (/mybots → your bot → API Token, digits:letters) in "
             "telegram.bot_token and restart; a revoked token must be replaced")


class TelegramHealth:
    def __init__(self, api_url: str) -> None:
        self.api_url = api_url
        self.health: Health | None = None

    def attach(self, health: Health) -> None:
        self.health = health

    @property
    def summary(self) -> str:
        current = self.health.current(COMPONENT) if self.health is not None else None
        return current.summary if current is not None else "not started"

    def connected(self, username: str) -> None:
        if self.health is not None:
            self.health.ok(COMPONENT, f"connected as @{username}")

    def refused(self, what: str) -> None:
        """The token was refused; never include the exception's text: PTB puts the token in it."""
        if self.health is not None:
            self.health.failing(COMPONENT, f"Telegram refused the bot token ({what}: Unauthorized)", TOKEN_FIX)

    def setup_refused(self, message: str) -> None:
        if self.health is not None:
            self.health.failing(COMPONENT, f"Telegram refused the channel's setup: {message}",
                                "check telegram.mode, webhook_url and webhook_secret")

    def unreachable(self, error: str) -> None:
        if self.health is not None:
            self.health.degraded(COMPONENT, f"cannot reach Telegram at {self.api_url} ({error})",
                                 "check the network, a proxy, and telegram.api_url")

    def succeeded(self) -> None:
        health = self.health
        if health is None:
            return
        current = health.current(COMPONENT)
        if current is not None and current.status is not Status.ok:
            health.ok(COMPONENT, "Telegram calls succeed again")
