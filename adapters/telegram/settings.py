"""The `telegram:` section of the config (DESIGN §4)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from bridge.config_daemon import Duration

_TOKEN = re.compile(r"^\d+:[A-Za-z0-9_-]+$")
_WEBHOOK_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


class TelegramSettings(BaseModel):
    """Bot token, Bot API address, and how updates arrive (long polling or webhook)."""

    model_config = ConfigDict(extra="forbid")

    bot_token: SecretStr
    api_url: str = Field(default="https://api.telegram.org/bot", pattern=r"^https?://")
    mode: Literal["polling", "webhook"] = "polling"
    webhook_url: str | None = Field(default=None, pattern=r"^https?://")
    webhook_secret: SecretStr | None = None
    # Flood limits: Telegram allows about 30 messages/s overall and 1/s per private chat.
    max_per_second: int = Field(default=30, ge=1, le=30)  # a sliding window: never more, see limits.py
    per_chat_interval: float = Field(default=1.0, ge=0)
    poll_timeout: int = Field(default=25, ge=0, le=50)
    retries: int = Field(default=4, ge=0, le=10)  # network errors and 429s, per call
    member_cache_s: float = Field(default=300.0, ge=0)  # group membership of responders (getChatMember)
    # a Reject whose reason is not typed within this is recorded without one (null: never)
    reason_wait: Duration | None = timedelta(minutes=10)
    # replicas in polling mode: one polls; the others check this often whether to take over
    failover_after: Duration = timedelta(seconds=5)
    # token refused or Telegram unreachable at start: try to connect again after this
    # (doubling, at most every 5 minutes); the daemon serves everyone else meanwhile
    reconnect_after: Duration = timedelta(seconds=5)

    @field_validator("bot_token")
    @classmethod
    def _token_shape(cls, token: SecretStr) -> SecretStr:
        if not _TOKEN.match(token.get_secret_value()):
            raise ValueError("does not look like a bot token (digits:letters, from @BotFather)")
        return token

    @field_validator("webhook_secret")
    @classmethod
    def _secret_shape(cls, secret: SecretStr | None) -> SecretStr | None:
        if secret is not None and not _WEBHOOK_SECRET.match(secret.get_secret_value()):
            raise ValueError("must be 1-256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule)")
        return secret

    @model_validator(mode="after")
    def _webhook_needs(self) -> TelegramSettings:
        if self.mode == "webhook" and (not self.webhook_url or self.webhook_secret is None):
            raise ValueError("mode: webhook needs webhook_url and webhook_secret")
        return self

    @property
    def file_url(self) -> str:
        """Where files are served: `…/bot` becomes `…/file/bot` (self-hosted servers too)."""
        base = self.api_url.rstrip("/")
        return base[: -len("bot")] + "file/bot" if base.endswith("/bot") else base + "/file/bot"
